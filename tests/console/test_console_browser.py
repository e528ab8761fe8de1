"""The web console in headless Chromium (Debian's chromium + chromium-driver,
driven by selenium) against a live broker with real traffic.

Saves ``test-artifacts/console.png`` (and, with KAFKA_WIRE_UPDATE_DOCS=1, a copy in ``docs/console.png`` for
the README). Skips, saying why, when Chromium cannot be found or started;
``make test`` installs it.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path

from kafka_wire.testing import EmulatedBroker
from tests.console.helpers import commit, consume_all, produce, screenshot

WAIT_S = 20


def _member(bootstrap: str, hub: str, group: str, stop: threading.Event) -> threading.Thread:
    """A live group member that reads everything, so the console shows members and assignments."""
    from confluent_kafka import Consumer

    def run() -> None:
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "dashboard-1",
                      "auto.offset.reset": "earliest", "session.timeout.ms": 10000})
        c.subscribe([hub])
        try:
            while not stop.is_set():
                c.poll(0.2)
        finally:
            c.close()

    t = threading.Thread(target=run, name="console-test-member", daemon=True)
    t.start()
    return t


def _trickle(bootstrap: str, hub: str, partitions: list[int], stop: threading.Event) -> threading.Thread:
    """Steady traffic while the page is open, so rates and the chart show something."""
    from confluent_kafka import Producer

    def run() -> None:
        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        while not stop.wait(0.25):
            for part in partitions:
                for _ in range(20):
                    p.produce(hub, value=b"t" * 512, partition=part)
            p.poll(0)
        p.flush(10)

    t = threading.Thread(target=run, name="console-test-trickle", daemon=True)
    t.start()
    return t


def test_console_shows_the_hub_its_partitions_and_a_lagging_groups_lag(tmp_path, chromium):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    stop = threading.Event()
    capture_dir = tmp_path / "capture"
    _capture_events(capture_dir, "emulatorNs1", "orders", partitions=2)
    with EmulatedBroker(tmp_path / "data", http=True, capture_dir=capture_dir) as broker:
        broker.create_hub("orders", 4)
        broker.create_hub("telemetry", 2)
        bootstrap = broker.bootstrap_servers
        # Traffic in a few bursts, so the throughput chart has a line to draw.
        counts = {0: 0, 1: 0, 2: 0, 3: 0}
        for burst in range(3):
            per = {0: 40, 1: 25, 2: 30, 3: 10 + burst * 5}
            produce(bootstrap, "orders", per, size=512)
            for p, n in per.items():
                counts[p] += n
            produce(bootstrap, "telemetry", {0: 20, 1: 20}, size=200)
            time.sleep(1.0)
        total = sum(counts.values())
        consume_all(bootstrap, "orders", 4, total, group="replay")
        commit(bootstrap, "orders", "billing", {0: 10, 1: counts[1], 2: 5, 3: counts[3]})
        lag0, lag2 = counts[0] - 10, counts[2] - 5  # partitions 1 and 3 keep growing below
        member = _member(bootstrap, "orders", "analytics", stop)
        trickle = _trickle(bootstrap, "orders", [1, 3], stop)
        try:
            driver = chromium
            wait = WebDriverWait(driver, WAIT_S)
            driver.get(broker.http_url + "/#/emulatorNs1/orders")
            wait.until(lambda d: d.find_element(By.ID, "hub-title").text == "orders")
            rows = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#partitions tbody tr")
                              if len(d.find_elements(By.CSS_SELECTOR, "#partitions tbody tr")) == 4
                              else None)
            assert [r.find_element(By.TAG_NAME, "th").text for r in rows] == ["0", "1", "2", "3"]
            assert rows[0].find_elements(By.TAG_NAME, "td")[1].text == str(counts[0] - 1)
            # The hub list names both hubs; the selected one is marked current.
            nav = driver.find_element(By.ID, "nav").text
            assert "orders" in nav and "telemetry" in nav
            current = driver.find_element(By.CSS_SELECTOR, '#tree a[aria-current="page"]')
            assert current.get_attribute("data-key") == "emulatorNs1/orders"
            # The lagging group shows its total lag, refreshed live.
            lag_cell = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, '[data-lag="billing"]'))
            assert lag_cell.text.startswith("lag ")
            assert int(lag_cell.text[4:].replace(",", "")) >= lag0 + lag2
            # Keyboard: focus the group's summary and open it with Enter.
            _press(driver, 'details[data-group="billing"] > summary', Keys.ENTER)
            wait.until(lambda d: d.find_element(By.CSS_SELECTOR, 'details[data-group="billing"]')
                       .get_attribute("open") is not None)
            lags = [row.find_elements(By.TAG_NAME, "td")[2].text for row in driver.find_elements(
                By.CSS_SELECTOR, 'details[data-group="billing"] .group-body tbody tr')]
            assert lags[0] == str(lag0) and lags[2] == str(lag2), lags
            # The live member and its assignment appear once the group is stable.
            wait.until(lambda d: d.find_element(By.CSS_SELECTOR, 'details[data-group="analytics"]'))
            _press(driver, 'details[data-group="analytics"] > summary', Keys.ENTER)
            wait.until(lambda d: "dashboard-1" in d.find_element(By.ID, "groups").text
                       and "partitions 0, 1, 2, 3" in d.find_element(By.ID, "groups").text)
            # and closed again, keeping the screenshot short
            _press(driver, 'details[data-group="analytics"] > summary', Keys.ENTER)
            wait.until(lambda d: d.find_element(By.CSS_SELECTOR, 'details[data-group="analytics"]')
                       .get_attribute("open") is None)
            # Keyboard: Tab reaches the hub list, ↓ moves to the next hub, Enter opens it.
            driver.execute_script("document.activeElement.blur(); window.scrollTo(0, 0)")
            _press(driver, '#tree a[data-key="emulatorNs1/orders"]', Keys.ARROW_DOWN)
            focused = driver.switch_to.active_element
            assert focused.get_attribute("data-key") == "emulatorNs1/telemetry"
            outline = driver.execute_script(
                "return getComputedStyle(document.activeElement).outlineStyle")
            assert outline != "none", "the focused hub link has no visible focus outline"
            focused.send_keys(Keys.ENTER)
            wait.until(lambda d: d.find_element(By.ID, "hub-title").text == "telemetry")
            wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#partitions tbody tr")) == 2)
            assert "1/2026/11/22/16/45/00.avro" in driver.find_element(By.ID, "capture").text
            # An injected fault that fires (the live member's next Fetch) shows in its panel.
            assert "No injected fault has fired" in driver.find_element(By.ID, "faults").text
            broker.faults.add("kafka-delay", params={"api": "Fetch", "ms": 1})
            wait.until(lambda d: "kafka-delay" in d.find_element(By.ID, "faults").text)
            errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
            assert not errors, f"JavaScript errors in the console page: {errors}"
            # Back to the lagging hub for the README's screenshot.
            driver.get(broker.http_url + "/#/emulatorNs1/orders")
            wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, '[data-lag="billing"]'))
            opened = 'details[data-group="billing"][open]'
            if not driver.find_elements(By.CSS_SELECTOR, opened):  # it remembers being open
                _press(driver, 'details[data-group="billing"] > summary', Keys.ENTER)
            wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, opened))
            time.sleep(5)  # a few more throughput samples, so the chart (and README) has a line
            driver.execute_script("document.activeElement.blur()")
            screenshot(driver, "console.png")
        finally:
            stop.set()
            member.join(15)
            trickle.join(15)


def _capture_events(directory: Path, namespace: str, hub: str, partitions: int) -> None:
    """CaptureFileCreated lines as the capture job appends them (the console only reads them)."""
    import json

    directory.mkdir()
    lines = []
    for p in range(partitions):
        name = f"{namespace}/{hub}/{p}/2026/11/22/16/45/00.avro"
        lines.append(json.dumps({
            "topic": f"/subscriptions/0/resourceGroups/kafka-wire/providers/Microsoft.EventHub/"
                     f"namespaces/{namespace}",
            "subject": f"eventhubs/{hub}", "eventType": "Microsoft.EventHub.CaptureFileCreated",
            "id": name, "eventTime": "2026-11-22T16:50:00.123Z",
            "data": {"fileUrl": f"file://{directory}/{name}", "fileType": "AzureBlockBlob",
                     "partitionId": str(p), "sizeInBytes": 48_211 + p * 7_000,
                     "eventCount": 90 + p * 15, "firstSequenceNumber": 0,
                     "lastSequenceNumber": 89 + p * 15}}))
    (directory / "_capture_events.jsonl").write_text("\n".join(lines) + "\n")


def _press(driver, css: str, key: str) -> None:
    """Focus ``css`` and press ``key`` there. The console redraws every few seconds (keeping
    the focus on the redrawn element), so a reference can go stale: retry, bounded."""
    from selenium.common.exceptions import StaleElementReferenceException

    for attempt in range(5):
        try:
            driver.execute_script("document.querySelector(arguments[0]).focus()", css)
            driver.switch_to.active_element.send_keys(key)
            return
        except StaleElementReferenceException:
            if attempt == 4:
                raise
            time.sleep(0.1)
