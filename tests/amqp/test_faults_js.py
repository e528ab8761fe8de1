"""The JavaScript SDK (@azure/event-hubs) against Event Hubs faults it sets itself
through the fault control API (/$faults) of a broker it did not start: the node side
is tests/js/eventhubs_faults.js; without node or the package this SKIPs with the
reason."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from kafka_wire.testing import EmulatedBroker

from .conftest import JS, MULTI_TOML, sdk_cs

SCRIPT = JS / "eventhubs_faults.js"


@pytest.fixture(scope="module")
def broker(module_tmp):
    with EmulatedBroker(module_tmp / "data", config_file=MULTI_TOML, amqp=True, http=True) as b:
        yield b


def test_the_js_sdk_meets_faults_it_set_from_outside(broker, node):
    broker.create_hub("js-faults", 1)
    res = subprocess.run([node, str(SCRIPT), sdk_cs(broker), "js-faults", broker.http_url,
                          broker.subscription_token], cwd=JS, capture_output=True, text=True,
                         timeout=120, env=dict(os.environ))
    lines = [line for line in res.stdout.splitlines() if line.startswith("{")]
    assert res.returncode == 0 and lines, f"{res.stdout}\n{res.stderr[-4000:]}"
    result = json.loads(lines[-1])
    print(json.dumps(result))
    cases = result["cases"]
    # server-busy is retryable in core-amqp: sendBatch retries after its delay and succeeds
    assert cases["busy-retried"]["ok"], cases["busy-retried"]
    # without retries the application gets the documented ServerBusyError, retryable
    refused = cases["busy-no-retry"]
    assert not refused["ok"] and refused["error"]["code"] == "ServerBusyError", refused
    assert refused["error"]["retryable"] is True
    # a receiver detached or cut off reattaches from its last event: nothing lost or doubled
    for name, upto in (("detach-receiver", 3), ("forced-receiver", 5)):
        case = cases[name]
        assert case["complete"] and case["events"] == list(range(upto)), (name, case)
    # a stolen receiver: processError gets ReceiverDisconnectedError (not retryable); the
    # subscription claims the partition again and, with no checkpoint store, reads it
    # again from its start position (earliest): at-least-once, as the SDK documents
    stolen = cases["stolen"]
    errors = stolen["errors"]
    assert errors and errors[0]["code"] == "ReceiverDisconnectedError" and not errors[0]["retryable"]
    again = stolen["events"][5:]
    assert stolen["events"][:5] == list(range(5)) and again == list(range(len(again))), stolen
    assert result["fired"] == ["server-busy", "server-busy", "detach-receiver",
                               "connection-forced", "link-stolen"]
