"""The console's Data Explorer in headless Chromium against a live broker: the
first hub selected on first load; JSON, text and binary bodies; jumps to a
sequence number and a time that survive a reload; filter, follow, send (read back
by a confluent-kafka consumer); a group's checkpoint link; and a namespace that
requires auth showing nothing until signed in. Saves test-artifacts/explorer.png
(docs/explorer.png with KAFKA_WIRE_UPDATE_DOCS=1, for the README)."""
from __future__ import annotations

import json
import time
import urllib.request

from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_wire.eventhubs import connection_string
from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import LISTENER, MULTI_TOML
from tests.console.helpers import commit, screenshot

WAIT_S = 20
NS = "emulatorNs1"


def _produce(bootstrap: str, records: list[dict]) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for rec in records:
        p.produce("orders", **rec)
    assert p.flush(30) == 0


def _order(i: int) -> dict:
    return {"value": json.dumps({"order": i, "customer": {"id": i % 5, "tier": "gold" if i % 5 == 0 else "std"},
                                 "lines": [{"sku": f"SKU-{i % 3}", "qty": 1 + i % 4}]}).encode(),
            "key": f"customer-{i % 5}".encode(), "partition": 0,
            "headers": [("source", b"web-shop"), ("trace-id", f"{i:08x}".encode())]}


def _rows(driver) -> list[int]:
    """The sequence numbers the events table shows (read in one go: it is redrawn live)."""
    return driver.execute_script(
        "return [...document.querySelectorAll('#ex-events tbody tr[data-seq]')].map((r) => Number(r.dataset.seq))")


def _wait_rows(driver, predicate):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT_S).until(lambda d: predicate(_rows(d)) and _rows(d))


def _fresh(driver, read):
    """``read(driver)``, again if the page redrew what it found before it was read or
    clicked (the overview and the events table are redrawn live: an element found just
    before a redraw is stale after it, or not yet laid out), or until it is there; at most
    WAIT_S."""
    from selenium.common.exceptions import (ElementNotInteractableException, NoSuchElementException,
                                            StaleElementReferenceException)
    from selenium.webdriver.support.ui import WebDriverWait

    got = []
    WebDriverWait(driver, WAIT_S, ignored_exceptions=(
        NoSuchElementException, StaleElementReferenceException, ElementNotInteractableException)).until(
        lambda d: got.append(read(d)) or True)
    return got[-1]


def _text(driver, css: str) -> str:
    from selenium.webdriver.common.by import By

    return _fresh(driver, lambda d: d.find_element(By.CSS_SELECTOR, css).text)


def _click(driver, css: str) -> None:
    """Click ``css`` after scrolling it to the middle (the events table's header sticks
    to the top of its scrolling box and would take a click at its edge)."""
    from selenium.webdriver.common.by import By

    def click(d):
        element = d.find_element(By.CSS_SELECTOR, css)
        d.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
        element.click()
    _fresh(driver, click)


def _text_fresh(driver, css: str, wanted: str) -> bool:
    """Wait until ``css`` shows ``wanted``, found again whenever the page redrew it."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT_S, ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)).until(
        lambda d: d.find_element(By.CSS_SELECTOR, css).text == wanted)


def _set(driver, element_id: str, value: str) -> None:
    """Set a form field as a person would leave it (and fire its change event)."""
    driver.execute_script(
        "const e = document.getElementById(arguments[0]); e.value = arguments[1];"
        "e.dispatchEvent(new Event('change', {bubbles: true})); e.dispatchEvent(new Event('input', {bubbles: true}));",
        element_id, value)


def test_explorer_browses_jumps_filters_follows_and_sends(tmp_path, chromium):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver = chromium
    # (stale elements too: the page redraws live, so one found may be gone when read)
    wait = WebDriverWait(driver, WAIT_S, ignored_exceptions=(StaleElementReferenceException,))
    with EmulatedBroker(tmp_path / "data", http=True) as broker:
        broker.create_hub("orders", 2)
        bootstrap = broker.bootstrap_servers
        # Three bursts over a few seconds (times to jump to), then a text and a binary event.
        _produce(bootstrap, [_order(i) for i in range(10)])
        time.sleep(1.2)
        _produce(bootstrap, [_order(i) for i in range(10, 20)])
        time.sleep(1.2)
        _produce(bootstrap, [_order(i) for i in range(20, 30)])
        _produce(bootstrap, [{"value": "a note in plain text: käse".encode(), "partition": 0},
                             {"value": bytes(range(48)), "key": b"\x01\x02", "partition": 0,
                              "headers": [("content-type", b"application/octet-stream")]}])
        commit(bootstrap, "orders", "billing", {0: 12, 1: 0})

        # First load: the only hub is selected, and the URL names it.
        driver.get(broker.http_url + "/")
        wait.until(lambda d: d.find_element(By.ID, "hub-title").text == "orders")
        assert driver.current_url.endswith(f"#/{NS}/orders")

        # The Data Explorer tab: earliest first, each body in its form.
        driver.find_element(By.ID, "tab-events").click()
        assert _wait_rows(driver, lambda rows: rows[:1] == [0])[:3] == [0, 1, 2]
        _set(driver, "ex-count", "100")
        driver.find_element(By.ID, "ex-go").click()
        _wait_rows(driver, lambda rows: len(rows) == 32)
        badges = _fresh(driver, lambda d: [b.text for b in d.find_elements(By.CSS_SELECTOR, "#ex-events tbody .fmt")])
        assert badges[:30] == ["JSON"] * 30 and badges[30:] == ["TEXT", "BINARY"]
        assert "a note in plain text: käse" in _text(driver, '#ex-events tr[data-seq="30"]')
        # Expanded: JSON as a tree, binary as a hex dump, headers listed.
        _click(driver, '#ex-events tr[data-seq="31"] button.expand')
        assert _text(driver, "#ex-events pre.hex").splitlines()[0].startswith("00000000  00 01 02 03")
        # Download body: the blob the page hands to the browser holds the body's bytes.
        driver.execute_script("window.__blobs = []; const make = URL.createObjectURL.bind(URL);"
                              "URL.createObjectURL = (b) => { window.__blobs.push(b); return make(b); };")
        _click(driver, "#ex-events tr.detail button.download")
        downloaded = driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "const look = () => window.__blobs.length"
            "  ? window.__blobs[0].arrayBuffer().then((b) => done(Array.from(new Uint8Array(b))))"
            "  : setTimeout(look, 50);"
            "look();")
        assert bytes(downloaded) == bytes(range(48))
        _click(driver, '#ex-events tr[data-seq="5"] button.expand')
        tree = _text(driver, "#ex-events .json")
        assert '"customer"' in tree and '"tier": "gold"' in tree
        detail = _text(driver, "#ex-events tr.detail")
        assert "trace-id" in detail and "00000005" in detail and "customer-0" in detail

        # Jump to a sequence number; the URL keeps it, so a reload shows the same page.
        _set(driver, "ex-from", "sequence")
        _set(driver, "ex-value", "12")
        driver.find_element(By.ID, "ex-go").click()
        assert _wait_rows(driver, lambda rows: rows[:1] == [12])[:2] == [12, 13]
        assert "from=sequence" in driver.current_url and "value=12" in driver.current_url
        driver.refresh()
        _wait_rows(driver, lambda rows: rows[:1] == [12])
        assert driver.find_element(By.ID, "ex-value").get_attribute("value") == "12"
        # Older pages back from there.
        driver.find_element(By.ID, "ex-older").click()
        _wait_rows(driver, lambda rows: rows[:1] == [0] and rows[-1] == 11)

        # Jump to a time: the second burst's first second (UTC) starts at its first event.
        first = json.loads(driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "fetch(arguments[0]).then((r) => r.text()).then(done)",
            f"/api/namespaces/{NS}/hubs/orders/partitions/0/events?from=sequence&value=9&count=2"))
        t9 = first["events"][0]["enqueued_time_ms"]
        after = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t9 // 1000 + 1))
        _set(driver, "ex-from", "time")
        _set(driver, "ex-time", after)
        driver.find_element(By.ID, "ex-go").click()
        _wait_rows(driver, lambda rows: rows[:1] == [10])
        assert "from=time" in driver.current_url

        # Filter what is loaded; search the partition for what is not.
        _set(driver, "ex-from", "earliest")
        _set(driver, "ex-count", "25")
        driver.find_element(By.ID, "ex-go").click()
        _wait_rows(driver, lambda rows: len(rows) == 25)
        _set(driver, "ex-filter", "gold")
        assert _wait_rows(driver, lambda rows: len(rows) < 25) == [0, 5, 10, 15, 20]
        _set(driver, "ex-filter", "käse")
        driver.find_element(By.ID, "ex-search").click()
        _wait_rows(driver, lambda rows: rows == [30])
        assert "1 match" in driver.find_element(By.ID, "ex-status").text
        _set(driver, "ex-filter", "")

        # Follow: an event produced now appears without reloading.
        _set(driver, "ex-from", "latest")
        _set(driver, "ex-count", "25")
        driver.find_element(By.ID, "ex-go").click()
        _wait_rows(driver, lambda rows: rows[-1:] == [31])
        driver.find_element(By.ID, "ex-follow").click()
        _produce(bootstrap, [{"value": b'{"late": true}', "partition": 0}])
        _wait_rows(driver, lambda rows: rows[-1:] == [32])
        driver.find_element(By.ID, "ex-follow").click()

        # Send from the form to partition 1, with a property; a Kafka consumer reads it.
        driver.find_element(By.CSS_SELECTOR, "#send-panel > summary").click()
        driver.find_element(By.CSS_SELECTOR, 'input[name="send-to"][value="partition"]').click()
        _set(driver, "send-partition", "1")
        _set(driver, "send-body", '{"sent": "from the console", "n": 1}')
        _set(driver, "send-props", "source=console\nattempt=1")
        driver.find_element(By.CSS_SELECTOR, "#send-form button[type=submit]").click()
        status = wait.until(lambda d: d.find_element(By.ID, "send-status").text.startswith("Sent")
                            and d.find_element(By.ID, "send-status").text)
        assert "partition 1 as sequence number 0" in status
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "form-reader", "enable.auto.commit": False})
        c.assign([TopicPartition("orders", 1, 0)])
        try:
            msg, deadline = None, time.monotonic() + WAIT_S
            while msg is None and time.monotonic() < deadline:
                msg = c.poll(0.5)
        finally:
            c.close()
        assert msg is not None and not msg.error()
        assert json.loads(msg.value()) == {"sent": "from the console", "n": 1}
        assert [name for name, _ in msg.headers()][:2] == ["source", "attempt"]
        driver.find_element(By.ID, "send-show").click()
        _wait_rows(driver, lambda rows: rows == [0])
        assert _fresh(driver, lambda d: d.find_element(By.CSS_SELECTOR, '#ex-events tr[data-seq="0"]')
                      .get_attribute("class")) == "mark"

        # A group's checkpoint links to the events around it, the next to read marked.
        driver.find_element(By.ID, "tab-overview").click()
        _click(driver, 'details[data-group="billing"] > summary')
        assert _text_fresh(driver, 'details[data-group="billing"] tbody a', "12")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, 'canvas[data-lag-chart="billing"]'))
        _click(driver, 'details[data-group="billing"] tbody a')
        rows = _wait_rows(driver, lambda rows: rows[:1] == [7])
        assert 12 in rows
        assert _fresh(driver, lambda d: d.find_element(By.CSS_SELECTOR, '#ex-events tr[data-seq="12"]')
                      .get_attribute("class")) == "mark"

        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert not errors, f"JavaScript errors in the console page: {errors}"

        # For the README: a page of orders with one opened.
        driver.get(broker.http_url + f"/#/{NS}/orders/events?partition=0&from=sequence&value=3&count=12")
        driver.refresh()  # a fresh page: the send form closed
        _wait_rows(driver, lambda rows: rows[:1] == [3])
        _click(driver, '#ex-events tr[data-seq="5"] button.expand')
        wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#ex-events .json"))
        driver.execute_script("document.activeElement.blur()")
        screenshot(driver, "explorer.png", max_height=1100)


def test_a_namespace_with_auth_shows_nothing_until_signed_in(tmp_path, chromium):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver = chromium
    wait = WebDriverWait(driver, WAIT_S, ignored_exceptions=(StaleElementReferenceException,))
    with EmulatedBroker(tmp_path / "data", config_file=MULTI_TOML, http=True) as broker:
        driver.get(broker.http_url + "/#/contoso/orders/events?partition=0")
        wait.until(lambda d: d.find_element(By.ID, "signin").is_displayed())
        assert "Sign in to namespace contoso" in driver.find_element(By.ID, "signin-title").text
        assert not driver.find_element(By.ID, "explorer").is_displayed()
        nav = driver.find_element(By.ID, "nav").text
        assert "Sign in to see its hubs" in nav and "payments" not in nav
        # The API the page uses refuses the namespace without a token.
        status = driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "fetch('/api/namespaces/contoso/hubs/orders/partitions/0/events').then((r) => done(r.status))")
        assert status == 401
        # A wrong key is refused, and says so.
        wrong = connection_string.build("contoso.servicebus.windows.net", key_name=LISTENER[0], key="d3Jvbmc=")
        _set(driver, "signin-cs", wrong)
        driver.find_element(By.CSS_SELECTOR, "#signin button[type=submit]").click()
        wait.until(lambda d: "wrong" in d.find_element(By.ID, "signin-error").text)
        # The listener's connection string opens it: hubs, then the explorer.
        good = connection_string.build("contoso.servicebus.windows.net", key_name=LISTENER[0], key=LISTENER[1])
        _set(driver, "signin-cs", good)
        driver.find_element(By.CSS_SELECTOR, "#signin button[type=submit]").click()
        wait.until(lambda d: d.find_element(By.ID, "explorer").is_displayed())
        wait.until(lambda d: "payments" in d.find_element(By.ID, "nav").text)
        assert "listener@contoso" in driver.find_element(By.ID, "signed-in").text
        wait.until(lambda d: "retained" in d.find_element(By.ID, "ex-status").text
                   or "empty" in d.find_element(By.ID, "ex-status").text)
        # Sending needs the Send right, which the listener lacks: the form says so.
        driver.find_element(By.CSS_SELECTOR, "#send-panel > summary").click()
        driver.find_element(By.CSS_SELECTOR, "#send-form button[type=submit]").click()
        wait.until(lambda d: "Send" in d.find_element(By.ID, "send-status").text
                   and "error" in d.find_element(By.ID, "send-status").get_attribute("class"))
        # ... and keeps the listener signed in (a refused right is not a refused token).
        assert driver.execute_script("return sessionStorage.getItem('kafka-wire.token.contoso')")
        driver.find_element(By.ID, "tab-overview").click()
        wait.until(lambda d: d.find_element(By.ID, "overview").is_displayed())
        assert "listener@contoso" in driver.find_element(By.ID, "signed-in").text
        # Signing out locks it again.
        driver.find_element(By.ID, "signout").click()
        wait.until(lambda d: d.find_element(By.ID, "signin").is_displayed())
        wait.until(lambda d: "payments" not in d.find_element(By.ID, "nav").text)
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"
                  and "401" not in e["message"]]  # the refused requests themselves are logged
        assert not errors, f"JavaScript errors in the console page: {errors}"


def _table(driver) -> list[str]:
    """The events table's rows, in order: an event's sequence number, or ``u<first>-<last>``
    for an unreadable batch's entry."""
    return driver.execute_script(
        "return [...document.querySelectorAll('#ex-events tbody tr[data-seq], #ex-events tbody tr[data-unreadable]')]"
        ".map((r) => r.dataset.seq !== undefined ? r.dataset.seq : 'u' + r.dataset.unreadable)")


def test_explorer_shows_an_unreadable_batch_at_its_place(tmp_path, chromium, monkeypatch):
    """A batch that cannot be read (a decompression bomb, bytes that do not decompress:
    stored by an older version) is a row of its own between the events around it, with
    its sequence numbers and why, as text; before, the page showed the events around it
    and nothing where it was."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from kafka_wire.log import records as rec
    from tests.rawclient import RawClient
    from tests.undecodable_batches import batch, bomb, not_decompressing, produce, stored_unchecked

    driver = chromium
    with EmulatedBroker(tmp_path / "data", http=True) as broker:
        broker.create_hub("broken", 1)
        stored_unchecked(monkeypatch)
        with RawClient(broker.bootstrap_servers) as c:
            for blob in (batch([b"good0"]), not_decompressing(), batch([b"good2"], codec_id=rec.GZIP), bomb(),
                         batch([b"good4"])):
                assert produce(c, "broken", blob).error_code == 0
        api = f"/api/namespaces/{NS}/hubs/broken/partitions/0/events"
        errors = {u["first_sequence_number"]: u["error"] for u in requests_json(broker.http_url + api)["unreadable_batches"]}
        assert sorted(errors) == [1, 3]

        wait = WebDriverWait(driver, WAIT_S)
        for where in ("from=earliest", "from=latest"):
            driver.get(broker.http_url + f"/#/{NS}/broken/events?partition=0&{where}")
            driver.refresh()
            wait.until(lambda d: _table(d) == ["0", "u1-1", "2", "u3-3", "4"])
            for first in (1, 3):
                row = driver.find_element(By.CSS_SELECTOR, f'#ex-events tr[data-unreadable="{first}-{first}"]')
                assert row.find_element(By.CSS_SELECTOR, "th").text == str(first)
                cell = row.find_element(By.CSS_SELECTOR, "td")
                assert cell.text == f"UNREADABLE {errors[first]}"  # (the badge's text is upper-cased)
                assert [e.tag_name for e in cell.find_elements(By.CSS_SELECTOR, "*")] == ["span"]  # text, not markup
            assert "2 unreadable batches" in driver.find_element(By.ID, "ex-status").text
        # A page that starts at one: Older goes on before it, not before the first event shown.
        driver.get(broker.http_url + f"/#/{NS}/broken/events?partition=0&from=sequence&value=3")
        driver.refresh()
        wait.until(lambda d: _table(d) == ["u3-3", "4"])
        assert "showing 3–4" in driver.find_element(By.ID, "ex-status").text
        _click(driver, "#ex-older")
        wait.until(lambda d: _table(d) == ["0", "u1-1", "2"])
        assert "before=3" in driver.current_url
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert not errors, f"JavaScript errors in the console page: {errors}"


def requests_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=WAIT_S) as r:
        return json.loads(r.read())
