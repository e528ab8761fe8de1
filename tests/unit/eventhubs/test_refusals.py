"""The namespace answers in no protocol's words, and every front end has a word for each answer."""
from __future__ import annotations

import ast
from pathlib import Path

import kafka.errors as Errors
import pytest

import kafka_wire
from kafka_wire.amqp.connection import CONDITIONS
from kafka_wire.apis import refusals as kafka_refusals
from kafka_wire.eventhubs import auth, policy, tier_rules
from kafka_wire.eventhubs.model import EventHubsModel, Namespace
from kafka_wire.eventhubs.refusals import Denial, Refusal
from kafka_wire.eventhubs.report import CompatibilityReport, load
from kafka_wire.rest import refusals as http_refusals

PACKAGE = Path(kafka_wire.__file__).parent
EVENTHUBS = PACKAGE / "eventhubs"
# The front ends, and the Kafka front end's codec and error codes (kafka_wire.errors).
FRONT_ENDS = ("amqp", "apis", "rest", "console", "http", "server", "codec", "errors")


def _calls(path: Path, name: str) -> list[ast.Call]:
    tree = ast.parse(path.read_text())
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)
            and getattr(n.func, "id", getattr(n.func, "attr", None)) == name]


def _rule_ids(path: Path, name: str, position: int) -> set[str]:
    """The string literals passed as argument ``position`` of ``name(...)`` in ``path``."""
    found = set()
    for call in _calls(path, name):
        if len(call.args) > position and isinstance(call.args[position], ast.Constant):
            found.add(call.args[position].value)
    return found


def test_the_tier_rules_list_every_rule_they_answer_with():
    assert _rule_ids(EVENTHUBS / "tier_rules.py", "_violation", 0) == tier_rules.RULES


def test_every_tier_rule_has_a_kafka_error():
    rules = tier_rules.RULES | {policy.THROUGHPUT_UNITS}
    rules |= _rule_ids(EVENTHUBS / "policy.py", "Denial", 2)  # the broker's [limits], by the same ids
    assert rules - set(kafka_refusals.RULE_ERRORS) == set()
    assert set(kafka_refusals.RULE_ERRORS) - rules == set()  # no stale entry either


@pytest.mark.parametrize("rule, error", [
    ("publication-size", Errors.MessageSizeTooLargeError),
    ("compression", Errors.UnsupportedForMessageFormatError),
    ("transactions", Errors.TransactionalIdAuthorizationFailedError),
    ("partitions-per-hub", Errors.InvalidPartitionsError),
    ("namespace-partitions", Errors.InvalidPartitionsError),
    ("hubs-per-namespace", Errors.PolicyViolationError),
    ("partition-growth", Errors.PolicyViolationError),
    ("retention", Errors.PolicyViolationError),
    ("compaction", Errors.PolicyViolationError),
    ("delete-records", Errors.PolicyViolationError),
    ("kafka-endpoint", Errors.TopicAuthorizationFailedError),
    ("throughput-units", Errors.PolicyViolationError),
])
def test_a_rule_answers_the_kafka_error_event_hubs_kafka_endpoint_answers(rule, error):
    # whatever its protocol-neutral reason says
    for reason in Refusal:
        assert kafka_refusals.error_code(Denial(reason, "m", rule)) == error.errno


@pytest.mark.parametrize("table", [kafka_refusals.REASON_ERRORS, CONDITIONS, http_refusals.STATUS],
                         ids=["kafka", "amqp", "http"])
def test_every_front_end_has_an_answer_for_every_reason(table):
    assert set(table) == set(Refusal)


def test_a_refusal_without_a_rule_answers_by_its_reason():
    denied = Denial(Refusal.DENIED, "no Send")
    assert kafka_refusals.kafka_error(denied) == (Errors.TopicAuthorizationFailedError.errno, "no Send")
    assert CONDITIONS[Refusal.DENIED] == "amqp:unauthorized-access"
    assert http_refusals.status(Refusal.DENIED) == 401
    assert CONDITIONS[Refusal.BUSY] == "com.microsoft:server-busy"
    assert http_refusals.status(Refusal.BUSY) == 503
    assert CONDITIONS[Refusal.TOO_LARGE] == "amqp:link:message-size-exceeded"
    assert http_refusals.status(Refusal.TOO_LARGE) == 413
    assert http_refusals.arm_error(Refusal.NOT_FOUND) == (404, "ResourceNotFound")
    assert http_refusals.arm_error(Refusal.DENIED) == (403, "AuthorizationFailed")


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, anywhere in it (functions and TYPE_CHECKING included)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


@pytest.mark.parametrize("path", sorted(EVENTHUBS.glob("*.py")), ids=lambda p: p.name)
def test_the_event_hubs_core_imports_no_protocol(path):
    imported = _imports(path)
    kafka = {m for m in imported if m == "kafka" or m.startswith("kafka.")}
    front = {m for m in imported for f in FRONT_ENDS
             if m == f"kafka_wire.{f}" or m.startswith(f"kafka_wire.{f}.")}
    assert not kafka, f"{path.name} imports kafka-python: {sorted(kafka)}"
    assert not front, f"{path.name} imports a front end: {sorted(front)}"


class _Clock:
    def now_ms(self) -> int:
        return 1_700_000_000_000

    def call_later(self, delay_ms, callback):
        raise AssertionError("a new entry is written at once")


def test_the_report_records_the_reason_and_the_kafka_error(tmp_path):
    report = CompatibilityReport(tmp_path, _Clock(), kafka_refusals.error_code)
    report.record("ns", "compression", "orders", "lz4 is not supported", enforced=True,
                  reason=Refusal.UNSUPPORTED)
    report.record("ns", "frame-size", None, "a large frame", enforced=True)  # a note: no answer
    entries = {e["rule"]: e for e in load(tmp_path)}
    assert entries["compression"]["reason"] == "unsupported"
    assert entries["compression"]["error_code"] == Errors.UnsupportedForMessageFormatError.errno
    assert entries["frame-size"]["reason"] is None and entries["frame-size"]["error_code"] is None


def test_an_open_namespace_takes_any_bearer_token_as_none():
    model = EventHubsModel.single("ns")
    ns = model.namespaces["ns"]
    assert ns.open and not ns.oauth and not ns.requires_auth
    assert auth.authenticate_header(model, "ns", "Bearer eyJhbGciOi.anything.at-all", 0) is None
    assert auth.authenticate_header(None, "ns", "Bearer x", 0) is None  # no model: open
    with pytest.raises(auth.AuthError):  # a SAS token is still checked
        auth.authenticate_header(model, "ns", "Bearer SharedAccessSignature sr=x", 0)


def test_a_namespace_that_requires_auth_refuses_a_bearer_token_without_oauth():
    model = EventHubsModel({"ns": Namespace(name="ns", auth="required")}, "ns")
    with pytest.raises(auth.AuthError, match="takes SAS tokens, not bearer tokens"):
        auth.authenticate_header(model, "ns", "Bearer eyJhbGciOi.anything.at-all", 0)
