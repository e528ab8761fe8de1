"""Any JSON given as the params of a fault kind is either set (with values in range) or
refused with FaultError (the control API's 400), never another exception: the parser of
outside input behind /$faults, kafka-wire fault and the config file's faults."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.fault_plan import KINDS, STORAGE_ERRORS, FaultError, FaultPlan

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False)
    | st.text(max_size=40) | st.sampled_from(list(STORAGE_ERRORS) + ["com.microsoft:timeout"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8)
NEW_KINDS = ["append-fail", "append-slow", "partition-unavailable", "delay-disposition",
             "withhold-flow", "token-refused", "http-slow"]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(kind=st.sampled_from(NEW_KINDS),
       params=st.dictionaries(st.sampled_from(["ms", "error", "condition", "description", "status",
                                               "x"]), json_values, max_size=3))
def test_params_are_set_in_range_or_refused_with_fault_error(kind, params):
    plan = FaultPlan(lambda: 0)
    try:
        fault = plan.add({"kind": kind, "params": params})
    except FaultError as exc:
        assert str(exc)
        return
    assert set(fault.params) == set(KINDS[kind][1])
    if "ms" in fault.params:
        assert isinstance(fault.params["ms"], int) and 0 <= fault.params["ms"] <= 600_000
    if kind == "append-fail":
        assert fault.params["error"] in STORAGE_ERRORS
