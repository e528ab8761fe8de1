"""REST send's ``?timeout=``: whole seconds from 0 to an hour, anything else a 400 in
the REST API's own error body, asked only of a caller the namespace let in. A
timeout too short for the throughput units refuses the send (503) but is no load:
it never auto-inflates the namespace (units never come back down)."""
from __future__ import annotations

import threading
import time
from urllib.parse import quote

import pytest
import requests

from kafka_wire.coordinator.clock import VirtualClock
from kafka_wire.eventhubs import sas
from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import wait_for

SEND_KEY = "c2VuZC1rZXk="
TOML = f'''
default_namespace = "inflatens"
[namespaces.inflatens]
tier = "Standard"
throughput_units = 1
auto_inflate_max = 20
[namespaces.inflatens.policies.sender]
primary_key = "{SEND_KEY}"
rights = ["Send"]
[namespaces.inflatens.eventhubs.orders]
partitions = 1

[namespaces.openns]
tier = "Standard"
throughput_units = 1
auto_inflate_max = 20
[namespaces.openns.eventhubs.orders]
partitions = 1
'''
SIGNED = "inflatens.servicebus.windows.net"  # Send policy: a token is needed
OPEN = "openns.servicebus.windows.net"       # no policies: no token needed

MAX_TIMEOUT_S = 3600  # kafka_wire.rest.send's, written out: the documented bound, pinned here
# Past the auto-inflate cool-down (1 s) before every request: had a request inflated
# the namespace, each would have added a unit.
COOL_DOWN_MS = 1_100


@pytest.fixture
def broker(tmp_path):
    (tmp_path / "c.toml").write_text(TOML)
    clock = VirtualClock(start_ms=time.time_ns() // 1_000_000)
    with EmulatedBroker(tmp_path / "data", config_file=tmp_path / "c.toml", clock=clock,
                        http=True) as b:
        yield b


def _token(key: str = SEND_KEY) -> str:
    return sas.generate(f"https://{SIGNED}/orders", "sender", key, int(time.time()) + 3600)


def _send(broker, timeout: str | None, *, host: str = SIGNED, auth: str | None = "send",
          body: bytes = b"hi") -> requests.Response:
    headers = {"Host": host}
    if auth == "send":
        headers["Authorization"] = _token()
    elif auth is not None:
        headers["Authorization"] = auth
    query = "" if timeout is None else "?timeout=" + quote(timeout, safe="")
    broker.clock.advance(COOL_DOWN_MS)
    return requests.post(f"{broker.http_url}/orders/messages{query}", data=body, headers=headers,
                         timeout=30)


def _state(broker, namespace: str = "inflatens") -> tuple[int, int, int]:
    """(units, refused sends, events stored) of ``namespace``."""
    def read():
        runtime = broker.broker.services.namespaces[namespace]
        return runtime.quota.units, runtime.quota.refused_requests, \
            runtime.topics.log("orders", 0).log_end_offset
    return broker.call(read)


def _refused_as_bad_timeout(r: requests.Response, sent: str) -> None:
    assert r.status_code == 400, (sent, r.status_code, r.text)
    assert r.text.startswith("<Error><Code>400</Code><Detail>timeout="), (sent, r.text)
    assert "whole number of seconds" in r.text, (sent, r.text)


def test_a_negative_timeout_is_400_and_inflates_nothing(broker):
    assert _send(broker, "60").status_code == 201
    for sent in ("-1", "-1000", "-0", "-3600"):
        _refused_as_bad_timeout(_send(broker, sent), sent)
    assert _state(broker) == (1, 0, 1), "units, refusals and events as after the one good send"


def test_only_ascii_digits_are_a_timeout(broker):
    """What ``int`` reads but the service's parameter is not: signs, blanks,
    underscores, other scripts' digits; and what is no whole number at all."""
    sent = [" 60", "60 ", "+60", "1_0", "\u0661\u0662", "\uff16\uff10", "\u00b2", "1.5", "1e3",
            "0x10", "sixty", "60s", "NaN", "-", "\u0000"]
    for text in sent:
        _refused_as_bad_timeout(_send(broker, text), text)
    assert _state(broker) == (1, 0, 0)


def test_path_like_and_repeated_timeouts_are_400(broker):
    # A repeated parameter: the first one given is the one read, and judged.
    for query in ("timeout=-1&timeout=60", "timeout=-1&timeout=-1", "timeout=../60&timeout=60"):
        broker.clock.advance(COOL_DOWN_MS)
        r = requests.post(f"{broker.http_url}/orders/messages?{query}", data=b"x",
                          headers={"Host": SIGNED, "Authorization": _token()}, timeout=30)
        _refused_as_bad_timeout(r, query)
    sent = ["../60", "60/../../etc/passwd", "/etc/passwd", "..%2f60", "60/messages", "60?timeout=1",
            "60&timeout=-1", "C:\\60"]
    for text in sent:
        _refused_as_bad_timeout(_send(broker, text), text)
    assert _state(broker) == (1, 0, 0)


def test_timeouts_past_an_hour_are_400_and_the_bounds_are_served(broker):
    for text in (str(MAX_TIMEOUT_S + 1), "86400", "2147483648", "9" * 40, "9" * 5000):
        _refused_as_bad_timeout(_send(broker, text), text[:50])
    for text in ("0", str(MAX_TIMEOUT_S), "0060"):
        assert _send(broker, text).status_code == 201, text  # an idle namespace: no wait at all
    assert _state(broker) == (1, 0, 3)


def test_callers_without_a_credential_get_401_before_the_timeout_is_read(broker):
    """401 first where a token is needed (the parameter is read only for a caller let in);
    where none is needed, the timeout is checked as for anyone."""
    wrong = sas.generate(f"https://{SIGNED}/orders", "sender", "d3Jvbmc=", int(time.time()) + 3600)
    for auth, why in ((None, "requires authentication"), (wrong, "signature"),
                      ("SharedAccessSignature sr=../../etc", "")):
        for text in ("-1", "9" * 5000, "../60"):
            r = _send(broker, text, auth=auth)
            assert r.status_code == 401 and why in r.text, (auth, text, r.text)
    for text in ("-1", "-5", "99999", "../60"):
        _refused_as_bad_timeout(_send(broker, text, host=OPEN, auth=None), text)
    assert _send(broker, None, host=OPEN, auth=None).status_code == 201
    assert _state(broker) == (1, 0, 0)
    assert _state(broker, "openns") == (1, 0, 1)


def test_a_zero_timeout_refused_for_the_units_inflates_nothing(broker):
    """timeout=0 is a caller's own budget: a send that would wait is refused (503), and
    that refusal is not load: the namespace is not over its units, so no unit is added."""
    big = b"x" * (700 * 1024)
    assert _send(broker, "0", body=big).status_code == 201  # within the burst
    for _ in range(3):
        assert _send(broker, "0", body=big).status_code == 201  # refilled by the cool-down
    # Two sends at one instant: the second would wait 367 ms, longer than its 0 s.
    broker.clock.advance(COOL_DOWN_MS)
    headers = {"Host": SIGNED, "Authorization": _token()}
    url = f"{broker.http_url}/orders/messages?timeout=0"
    assert requests.post(url, data=big, headers=headers, timeout=30).status_code == 201
    r = requests.post(url, data=big, headers=headers, timeout=30)
    assert r.status_code == 503 and "throughput unit" in r.text, r.text
    assert _state(broker) == (1, 1, 5)


def test_real_load_still_inflates(broker):
    """Sends the namespace took beyond its units (its ingress in debt) add a unit."""
    big = b"x" * (700 * 1024)
    broker.clock.advance(COOL_DOWN_MS)
    headers = {"Host": SIGNED, "Authorization": _token()}
    url = f"{broker.http_url}/orders/messages?timeout=60"
    assert requests.post(url, data=big, headers=headers, timeout=30).status_code == 201
    # 376 KiB past the burst: throttled (answered after its throttle time), and inflated.
    answer: list = []
    t = threading.Thread(target=lambda: answer.append(requests.post(url, data=big, headers=headers,
                                                                    timeout=30)), daemon=True)
    t.start()
    assert wait_for(lambda: _state(broker)[2] == 2), "the broker never took the second send"
    broker.clock.advance(1_000)  # the throttle time passes
    t.join(10)
    assert answer and answer[0].status_code == 201
    assert _state(broker)[0] == 2
