"""The console and /metrics on geo-replicated and Geo-DR namespaces: each replica's
role, location, lag and pause, the aliases a namespace takes part in; the console's
``/api/namespaces/{ns}/geo`` through the namespace's door (no, wrong and right
token; malformed, huge and path-like names); and, where Chromium is installed, a
screenshot of the page with a paused, lagging replica (test-artifacts/georeplication.png,
and docs/ with KAFKA_WIRE_UPDATE_DOCS=1)."""
from __future__ import annotations

import time

import requests
from confluent_kafka import Producer

from kafka_wire.eventhubs import sas
from kafka_wire.testing import EmulatedBroker
from tests.console.conftest import chromium  # noqa: F401  (the fixture, headless Chromium)
from tests.console.test_http_api import scrape, value
from tests.geo.management import wait_for

GEO, SECURE, PRIMARY, SECONDARY, ALIAS = "geo-orders", "secure-geo", "dr-primary", "dr-secondary", "orders-alias"
KEY = ("RootManageSharedAccessKey", "c2VjdXJlLWtleQ==")
TOML = f"""
default_namespace = "{GEO}"
[namespaces.{GEO}]
tier = "Premium"
[namespaces.{GEO}.eventhubs.orders]
partitions = 2
[namespaces.{GEO}.geo_replication]
replicas = ["westus", "eastus"]
max_replication_lag_seconds = 300
[namespaces.{SECURE}]
tier = "Premium"
[namespaces.{SECURE}.policies.{KEY[0]}]
primary_key = "{KEY[1]}"
rights = ["Manage", "Send", "Listen"]
[namespaces.{SECURE}.geo_replication]
replicas = ["northeurope", "westeurope"]
[namespaces.{PRIMARY}]
tier = "Standard"
[namespaces.{PRIMARY}.eventhubs.telemetry]
partitions = 1
[namespaces.{SECONDARY}]
tier = "Standard"
[geo_dr.{ALIAS}]
primary = "{PRIMARY}"
secondary = "{SECONDARY}"
"""


def start(tmp_path) -> EmulatedBroker:
    config = tmp_path / "geo.toml"
    config.write_text(TOML)
    return EmulatedBroker(tmp_path / "data", config_file=config, http=True).start()


def token(key) -> str:
    return sas.generate(sas.resource_uri(f"{SECURE}.servicebus.windows.net"), key[0], key[1],
                        int(time.time()) + 600)


def stall_and_send(broker, count: int) -> None:
    """eastus paused, then ``count`` events acknowledged by westus (asynchronous mode)."""
    broker.call(broker.broker.services.namespaces[GEO].geo.pause, "eastus")
    p = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(count):
        p.produce("orders", b"e%d" % i, partition=i % 2)
    assert p.flush(20) == 0


def test_geo_api_goes_through_the_door_and_metrics_show_lag_and_roles(tmp_path):
    broker = start(tmp_path)
    try:
        api = f"{broker.http_url}/api/namespaces"
        cases = [
            (requests.get(f"{api}/{SECURE}/geo", timeout=10), 401),
            (requests.get(f"{api}/{SECURE}/geo", headers={"Authorization": token((KEY[0], "d3Jvbmc="))},
                          timeout=10), 401),
            (requests.get(f"{api}/{SECURE}/geo", headers={"Authorization": "garbage"}, timeout=10), 401),
            (requests.get(f"{api}/..%2F..%2Fetc/geo", timeout=10), 404),
            (requests.get(f"{api}/{'n' * 3000}/geo", timeout=10), 404),
            (requests.get(f"{api}/{SECURE}/geo/extra", timeout=10), 404),
        ]
        for answer, status in cases:
            assert answer.status_code == status, answer.text
            assert "error" in answer.json() and "northeurope" not in answer.text
        seen = requests.get(f"{api}/{SECURE}/geo", headers={"Authorization": token(KEY)}, timeout=10).json()
        assert [(r["location"], r["role"]) for r in seen["geo_replication"]["replicas"]] == \
            [("northeurope", "Primary"), ("westeurope", "Secondary")]
        assert seen["geo_replication"]["synchronous"] is True
        listed = requests.get(f"{broker.http_url}/api/namespaces", timeout=10).json()
        assert next(n for n in listed if n["name"] == SECURE)["locked"] is True
        assert "geo" not in next(n for n in listed if n["name"] == SECURE)  # not without its token
        dr = {n["name"]: n["geo_dr"] for n in listed if n["name"] in (PRIMARY, SECONDARY)}
        assert dr[PRIMARY] == [{"alias": ALIAS, "role": "Primary", "partner": SECONDARY, "points_at": PRIMARY,
                                "host": f"{ALIAS}.servicebus.windows.net"}]
        assert dr[SECONDARY][0]["role"] == "Secondary" and dr[SECONDARY][0]["partner"] == PRIMARY
        wait_for(lambda: [h["name"] for h in next(n for n in requests.get(
            f"{broker.http_url}/api/namespaces", timeout=10).json() if n["name"] == SECONDARY)["hubs"]]
            == ["telemetry"])  # the TOML pair's primary hub, copied by the broker

        stall_and_send(broker, 30)
        samples = wait_for(lambda: (s := scrape(broker)) and value(
            s, "kafkawire_geo_replication_lag_seconds", namespace=GEO, location="eastus") > 0 and s)
        assert value(samples, "kafkawire_geo_replication_lag_events", namespace=GEO, location="eastus") == 30
        assert value(samples, "kafkawire_geo_replication_lag_seconds", namespace=GEO, location="westus") == 0
        assert value(samples, "kafkawire_geo_replica_paused", namespace=GEO, location="eastus") == 1
        assert value(samples, "kafkawire_geo_replica_role", namespace=GEO, location="westus", role="Primary") == 1
        assert value(samples, "kafkawire_geo_replica_role", namespace=GEO, location="eastus", role="Secondary") == 1
        assert value(samples, "kafkawire_geo_replica_role", namespace=SECURE, location="westeurope",
                     role="Secondary") == 1
        geo = requests.get(f"{api}/{GEO}/geo", timeout=10).json()["geo_replication"]
        eastus = next(r for r in geo["replicas"] if r["location"] == "eastus")
        assert (eastus["paused"], eastus["lag_events"], eastus["state"]) == (True, 30, "Paused")
        broker.call(broker.broker.services.namespaces[GEO].geo.resume, "eastus")
        samples = scrape(broker)
        assert value(samples, "kafkawire_geo_replication_lag_events", namespace=GEO, location="eastus") == 0
        assert value(samples, "kafkawire_geo_replica_paused", namespace=GEO, location="eastus") == 0
    finally:
        broker.stop()


def test_console_page_shows_replicas_lag_and_the_alias(tmp_path, chromium):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.console.helpers import screenshot

    broker = start(tmp_path)
    try:
        stall_and_send(broker, 120)
        driver = chromium
        wait = WebDriverWait(driver, 20)
        driver.get(broker.http_url + f"/#/{GEO}/orders")
        wait.until(lambda d: d.find_element(By.ID, "hub-title").text == "orders")
        east = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, f'[data-geo="{GEO}"] [data-location="eastus"]'))
        wait.until(lambda d: "paused" in east.text and "120 events" in east.text)
        west = driver.find_element(By.CSS_SELECTOR, f'[data-geo="{GEO}"] [data-location="westus"]').text
        assert "Primary" in west and "lag" not in west
        assert "Secondary" in east.text
        alias = driver.find_element(By.CSS_SELECTOR, f'[data-geo="{PRIMARY}"] [data-alias="{ALIAS}"]').text
        assert "Geo-DR Primary" in alias and SECONDARY in alias
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert not errors, f"JavaScript errors in the console page: {errors}"
        driver.execute_script("document.activeElement.blur()")
        screenshot(driver, "georeplication.png")
    finally:
        broker.stop()
