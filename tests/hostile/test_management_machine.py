"""Any sequence of management requests, with any names and bodies, from the
owner, a namespace's root or no one: never a 500, never a file outside the data
directory, descriptors and namespaces bounded, and the default namespace stays
what plain host names mean. ``make soak`` runs many more steps."""
from __future__ import annotations

import os
from urllib.parse import quote

import requests
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kafka_wire.eventhubs.bounds import Bounds
from tests.faults.harness import SOAK
from tests.hostile.conftest import start
from tests.hostile.surfaces import API, CREDENTIALS, HOST, MG, NS

NAMES = st.one_of(
    st.sampled_from(["payments", "orders", "made", "localhost", "fresh-ns", "attacker1", "$Default", "..",
                     "%2e%2e", "a%00b", "%E2%80%AE", "x" * 300, "a%5Cb", "UPPER", "-x", "lake"]),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=40).map(lambda t: quote(t, safe="")))
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.text(max_size=30)
    | st.sampled_from(["/etc", "../..", "Avro", "EventHubArchive.AzureDataLake", "Deny", "Manage"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["properties", "partitionCount", "captureDescription", "destination", "name",
                         "dataLakeAccountName", "dataLakeFolderPath", "archiveNameFormat", "enabled",
                         "sku", "capacity", "tier", "rights", "ipRules", "ipMask", "defaultAction",
                         "retentionDescription", "retentionTimeInHours", "status", "keyType"]),
        inner, max_size=4),
    max_leaves=12)
KINDS = st.sampled_from(["", "/eventhubs/{n}", "/eventhubs/payments/consumergroups/{n}",
                         "/authorizationRules/{n}", "/eventhubs/payments/authorizationRules/{n}",
                         "/authorizationRules/{n}/listKeys", "/networkRuleSets/default",
                         "/schemagroups/{n}", "/applicationGroups/{n}"])
WHO = st.sampled_from(["owner", "root", "none"])


class ManagementMachine(RuleBasedStateMachine):
    broker = None
    outside = None

    def _call(self, method: str, path: str, who: str, body) -> None:
        headers = {"Host": HOST}
        if who == "owner":
            headers["Authorization"] = f"Bearer {self.broker.subscription_token}"
        elif who == "root":
            headers.update(CREDENTIALS[0].header())
        answer = requests.request(method, self.broker.http_url + path, json=body, headers=headers, timeout=15)
        assert answer.status_code < 500, (method, path, body, answer.status_code, answer.text)
        if answer.status_code >= 400:
            assert answer.json()["error"]["code"], answer.text

    @rule(namespace=NAMES, who=WHO, body=VALUES, method=st.sampled_from(["PUT", "DELETE", "GET"]))
    def namespace(self, namespace, who, body, method):
        self._call(method, f"{MG}/{namespace}{API}", who, body)

    @rule(kind=KINDS, name=NAMES, who=WHO, body=VALUES,
          method=st.sampled_from(["PUT", "PUT", "GET", "DELETE", "POST", "PATCH"]))
    def resource(self, kind, name, who, body, method):
        self._call(method, f"{MG}/{NS}{kind.format(n=name)}{API}", who, body)

    @rule(name=NAMES, who=WHO, account=st.sampled_from(["acct", "/tmp", "..", "escape"]),
          folder=NAMES, fmt=st.none() | NAMES)
    def capture(self, name, who, account, folder, fmt):
        props = {"dataLakeAccountName": account, "dataLakeFolderPath": str(self.outside) if folder == "lake"
                 else folder}
        if fmt is not None:
            props["archiveNameFormat"] = fmt
        body = {"properties": {"captureDescription": {"enabled": True, "destination": {
            "name": "EventHubArchive.AzureDataLake", "properties": props}}}}
        self._call("PUT", f"{MG}/{NS}/eventhubs/{name}{API}", who, body)

    @invariant()
    def nothing_outside_and_bounded(self):
        services = self.broker.broker.services
        assert list(self.outside.iterdir()) == []
        assert services.eventhubs.namespace_for_host("localhost") == NS
        assert services.eventhubs.namespace_for_host("127.0.0.1") == NS
        assert len(services.namespaces) <= services.config.bounds.namespaces
        assert len(os.listdir("/proc/self/fd")) < self.fds + 256


def test_any_management_sequence_keeps_the_boundary(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    broker = start(tmp_path / "data", bounds=Bounds(namespaces=4, partitions_per_hub=64,
                                                    partitions_per_namespace=256))
    ManagementMachine.broker, ManagementMachine.outside = broker, outside
    ManagementMachine.fds = len(os.listdir("/proc/self/fd"))
    try:
        runner = settings(max_examples=400 if SOAK else 25, stateful_step_count=20, deadline=None,
                          derandomize=True, suppress_health_check=list(HealthCheck))(ManagementMachine)
        runner.TestCase().runTest()
    finally:
        broker.stop()
    for path in (tmp_path / "data").rglob("*"):  # every file the broker made is under its data dir
        assert path.resolve().is_relative_to((tmp_path / "data").resolve()) or path.is_symlink()
