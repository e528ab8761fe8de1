"""The JavaScript SDK (@azure/event-hubs) against Event Hubs faults it sets itself
through the fault control API (/$faults) of a broker it did not start: the node side
is tests/js/eventhubs_faults.js; without node or the package this SKIPs with the
reason."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from kafka_wire.eventhubs import connection_string
from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.test_oauth import config, rsa_key  # noqa: F401  (fixtures)
from tests.faults.harness import contoso_broker

from .conftest import JS, sdk_cs

SCRIPT = JS / "eventhubs_faults.js"


@pytest.fixture(scope="module")
def broker(module_tmp):
    with contoso_broker(module_tmp) as b:
        yield b


def test_the_js_sdk_meets_faults_it_set_from_outside(broker, node):
    broker.create_hub("js-faults", 1)
    res = subprocess.run([node, str(SCRIPT), sdk_cs(broker), "js-faults", broker.http_url,
                          broker.subscription_token], cwd=JS, capture_output=True, text=True,
                         timeout=240, env=dict(os.environ))
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
    # a failed append (amqp:internal-error) is InternalServerError, retryable: retried
    assert cases["append-fail-retried"]["ok"], cases["append-fail-retried"]
    failed = cases["append-fail-no-retry"]["error"]
    assert failed["code"] == "InternalServerError" and failed["retryable"] is True
    assert "Input/output error" in failed["message"]
    # an unavailable partition (com.microsoft:timeout) is ServiceUnavailableError, retryable
    assert cases["unavailable-retried"]["ok"], cases["unavailable-retried"]
    unavailable = cases["unavailable-no-retry"]["error"]
    assert unavailable["code"] == "ServiceUnavailableError" and unavailable["retryable"] is True
    # quota exceeded is QuotaExceededError, not retryable: it fails with retries too
    quota = cases["quota-exceeded"]
    assert not quota["ok"] and quota["error"]["code"] == "QuotaExceededError"
    assert quota["error"]["retryable"] is False
    # a sender cut off mid-send: the send in flight waits out its try (tryMs: 2.5 s, 5 s under
    # make soak), then the retry succeeds
    for name in ("detach-sender", "forced-sender"):
        assert cases[name]["ok"] and cases[name]["ms"] >= 0.9 * result["tryMs"], (name, cases[name])
    assert cases["cbs-fail"]["ok"] and cases["management-fail"]["ok"]
    assert cases["management-fail"]["ids"] == ["0"]
    # a delayed disposition holds the send; one withheld past the try is OperationTimeoutError
    assert cases["delayed"]["ok"] and cases["delayed"]["ms"] >= 1400
    assert cases["append-slow"]["ok"] and cases["append-slow"]["ms"] >= 1400
    withheld = cases["withheld"]
    assert not withheld["ok"] and withheld["error"]["code"] == "OperationTimeoutError"
    assert 2500 <= withheld["ms"] < 15000
    # credit taken back: the next send finds none, waits 1 s, SenderBusyError, retried once
    # the credit is back (2.5 s)
    flow = cases["withhold-flow-sender"]
    assert flow["ok"] and flow["third"]["ok"] and flow["third"]["ms"] >= 2000, flow
    # a receiver whose attach is refused twice retries it without telling processError
    fresh = cases["unavailable-receiver"]
    assert fresh["complete"] and fresh["errors"] == [] and fresh["events"][:7] == list(range(7))
    held = cases["withhold-flow-receiver"]
    assert held["complete"] and held["after"] == [120, 121] and held["errors"] == []
    assert held["ms"] >= 2300, held
    # what the partition holds: once each, in order; refused sends (101, 103, 104) are not
    # there, the send whose disposition was withheld (111) is (at-least-once)
    stored = result["stored"]
    assert stored == sorted(set(stored)) and 111 in stored
    assert not {101, 103, 104} & set(stored)
    assert {100, 102, 105, 106, 107, 108, 109, 110, 112, 113, 114, 115, 120, 121} <= set(stored)
    assert result["fired"][:5] == ["server-busy", "server-busy", "detach-receiver",
                                   "connection-forced", "link-stolen"]
    assert {"append-fail", "append-slow", "partition-unavailable", "delay-disposition", "withhold-flow",
            "quota-exceeded", "detach-sender", "cbs-fail", "management-fail"} <= set(result["fired"])


@pytest.fixture(scope="module")
def oauth_broker(config, tmp_path_factory):  # noqa: F811
    with EmulatedBroker(tmp_path_factory.mktemp("js-token") / "data", config_file=config,
                        amqp=True, http=True) as b:
        yield b


def test_the_js_sdk_ignores_a_refused_token_renewal_while_its_token_lives(oauth_broker, node):
    """token-refused: @azure/event-hubs renews a bearer token 2 minutes before it expires;
    the renewal answered 401 is logged (verbose) and dropped, the connection keeps the
    token it has, and every send succeeds."""
    from tests.eventhubs.test_oauth import ISS, OWNER, claims, jwt

    host = f"127.0.0.1:{oauth_broker.amqp_port}"
    cs = connection_string.build(host, key_name="RootManageSharedAccessKey", key="cm9vdC1rZXk=",
                                 emulator=True)
    token = jwt(claims(roles=[OWNER], **ISS))
    res = subprocess.run([node, str(JS / "eventhubs_token_refused.js"), cs, "telemetry",
                          oauth_broker.http_url, oauth_broker.subscription_token, token],
                         cwd=JS, capture_output=True, text=True, timeout=90, env=dict(os.environ))
    lines = [line for line in res.stdout.splitlines() if line.startswith("{")]
    assert res.returncode == 0 and lines, f"{res.stdout}\n{res.stderr[-4000:]}"
    result = json.loads(lines[-1])
    print(json.dumps(result))
    assert result["sends"] and all(s["ok"] for s in result["sends"]), result["sends"]
    assert result["issued"] >= 3  # the first put-token and at least two renewals
    assert result["fired"] and set(result["fired"]) == {"token-refused"}
    assert len(result["fired"]) == result["issued"] - 1  # every renewal refused, not the first
