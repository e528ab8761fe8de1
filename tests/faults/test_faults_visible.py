"""Every injected fault that fires is shown: in /metrics
(kafkawire_faults_fired_total{kind,namespace}), in the console (/api/faults and the
snapshot's faults_fired, only for the namespaces the request may see: nothing of a
namespace that requires auth without its token or with a wrong one) and in
`kafka-wire report` (kept in the data directory, after the broker stopped)."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import requests
from azure.eventhub import EventData, EventHubProducerClient
from azure.eventhub.exceptions import EventDataSendError
from prometheus_client.parser import text_string_to_metric_families

from kafka_wire.eventhubs import sas
from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import MULTI_TOML, ROOT, sdk_cs

HOST = "contoso.servicebus.windows.net"


def _token(key) -> str:
    return sas.generate(sas.resource_uri(HOST, None), key[0], key[1], int(time.time()) + 600)


def _fired_metric(broker) -> dict[tuple[str, str], float]:
    text = requests.get(f"{broker.http_url}/metrics", timeout=10).text
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "kafkawire_faults_fired_total":
                out[(s.labels["kind"], s.labels["namespace"])] = s.value
    return out


def test_fired_faults_show_in_metrics_the_console_for_who_may_see_them_and_the_report(tmp_path):
    data = tmp_path / "data"
    with EmulatedBroker(data, config_file=MULTI_TOML, amqp=True, http=True) as broker:
        assert _fired_metric(broker) == {}
        broker.faults.add("server-busy", scope={"hub": "orders"}, count=2,
                          params={"description": "busy, to be seen"})
        producer = EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name="orders")
        with producer:
            for _ in range(2):
                try:
                    producer.send_event(EventData(b"x"), partition_id="1")
                except EventDataSendError:
                    pass
        assert _fired_metric(broker) == {("server-busy", "contoso"): 2}
        broker.faults.clear()  # the record goes; a counter only goes up
        assert broker.faults.fired == []
        assert _fired_metric(broker) == {("server-busy", "contoso"): 2}

        broker.faults.add("detach-receiver", scope={"hub": "orders"})
        # The firing, set off by a receive of the Python SDK.
        from azure.eventhub import EventHubConsumerClient
        consumer = EventHubConsumerClient.from_connection_string(
            sdk_cs(broker), consumer_group="$Default", eventhub_name="orders")
        got = []
        import threading
        worker = threading.Thread(target=lambda: consumer.receive(
            on_event=lambda ctx, e: got.append(e), partition_id="1", starting_position="-1",
            max_wait_time=1), daemon=True)
        worker.start()
        deadline = time.monotonic() + 30
        while not broker.faults.fired and time.monotonic() < deadline:
            time.sleep(0.1)
        consumer.close()
        worker.join(30)
        fired = broker.faults.fired
        assert [f["kind"] for f in fired] == ["detach-receiver"]

        api = f"{broker.http_url}/api/faults"
        assert requests.get(api, timeout=10).json() == []  # contoso requires auth: not without a token
        wrong = requests.get(api, params={"namespace": "contoso"}, timeout=10,
                             headers={"Authorization": _token((ROOT[0], "d3Jvbmc="))})
        assert wrong.status_code == 200 and wrong.json() == []
        right = requests.get(api, params={"namespace": "contoso"}, timeout=10,
                             headers={"Authorization": _token(ROOT)}).json()
        assert [(f["kind"], f["namespace"], f["hub"], f["partition"], f["consumer_group"]) for f in right] \
            == [("detach-receiver", "contoso", "orders", 1, "$default")]  # group names fold case
        assert right[0]["client"] and right[0]["protocol"] == "amqp"
        snap = requests.get(f"{broker.http_url}/api/snapshot", timeout=10).json()
        assert snap["faults_fired"] == []
        snap = requests.get(f"{broker.http_url}/api/snapshot", params={"namespace": "contoso"},
                            headers={"Authorization": _token(ROOT)}, timeout=10).json()
        assert [f["kind"] for f in snap["faults_fired"]] == ["detach-receiver"]
        for hostile in ("/api/faults/../../etc/passwd", "/api/faults/1", "/api/faults?namespace=" + "x" * 5000):
            r = requests.get(broker.http_url + hostile, timeout=10)
            assert r.status_code in (200, 400, 404, 414) and "root:" not in r.text, (hostile, r.status_code)
            if r.status_code == 200:
                assert r.json() == []
        assert _fired_metric(broker) == {("server-busy", "contoso"): 2, ("detach-receiver", "contoso"): 1}

    report = subprocess.run([sys.executable, "-m", "kafka_wire.cli", "report", "--data-dir", str(data)],
                            capture_output=True, text=True, timeout=60)
    assert report.returncode == 0, report.stderr
    assert "fault server-busy [orders]: injected fault fired, 2x" in report.stdout, report.stdout
    assert "fault detach-receiver [orders]: injected fault fired, 1x" in report.stdout
    assert "busy" not in report.stderr
    entries = json.loads(subprocess.run(
        [sys.executable, "-m", "kafka_wire.cli", "report", "--json", "--data-dir", str(data)],
        capture_output=True, text=True, timeout=60).stdout)["entries"]
    faults = {e["rule"]: e for e in entries if e["kind"] == "fault"}
    assert faults["fault detach-receiver"]["message"].startswith("injected fault 2 (detach-receiver)")
    assert "consumer_group $default" in faults["fault detach-receiver"]["message"]
