"""kafka_wire.whole_numbers: the one check of a client's or an operator's digits, and
the callers that once used str.isdigit (it takes '²', which int() refuses, and '١',
which int() reads as 1)."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings, strategies as st

from kafka_wire import fault_cli
from kafka_wire.container import serve_arguments
from kafka_wire.whole_numbers import whole_number

# digits of other scripts and superscripts among ASCII ones, a sign, and huge runs
_TEXT = st.one_of(
    st.text(alphabet=st.sampled_from("0123456789-+ ²³¹١٢߀０𝟘_.e"), max_size=50),
    st.text(max_size=20),
    st.integers(min_value=-10**60, max_value=10**60).map(str),
    st.integers(min_value=1, max_value=6000).map(lambda n: "9" * n),
)


@settings(derandomize=True, max_examples=2000, deadline=None)
@given(_TEXT, st.booleans(), st.integers(min_value=1, max_value=60))
def test_a_number_only_where_ascii_digits_are_and_never_an_exception(text, signed, most):
    expected = re.fullmatch(("-?" if signed else "") + "[0-9]{1,%d}" % most, text, re.ASCII)
    assert whole_number(text, signed=signed, most=most) == (int(text) if expected else None)


@pytest.mark.parametrize("text", ["²", "١", "0x10", " 5", "5 ", "", "-", "--5", "1" * 41])
def test_what_isdigit_or_int_took_is_refused(text):
    assert whole_number(text, signed=True) is None


@pytest.mark.parametrize("port", ["²", "١", "99999", "0", "9" * 5000])
def test_a_port_in_the_environment_is_a_number_from_1_to_65535(tmp_path, port):
    with pytest.raises(ValueError, match="is not a port: use a number from 1 to 65535"):
        serve_arguments({"AMQP_PORT": port}, [], tmp_path / "c.json")


def test_a_fault_parameter_is_a_number_only_where_it_is_one():
    assert fault_cli._param("ms=-250") == ("ms", -250)
    assert fault_cli._param("condition=²") == ("condition", "²")
    assert fault_cli._param("description=١") == ("description", "١")
