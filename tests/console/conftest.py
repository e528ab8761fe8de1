"""Headless Chromium for the console's browser tests (Debian's chromium and
chromium-driver, driven by selenium); skips, saying why, when it cannot start."""
from __future__ import annotations

import shutil
import tempfile

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
WAIT_S = 20


@pytest.fixture
def chromium():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("CONSOLE BROWSER TEST SKIPPED: selenium is not installed "
                    "(pip install -e '.[test]')")
    if not CHROMIUM or not DRIVER:
        pytest.skip("CONSOLE BROWSER TEST SKIPPED: Debian's chromium and chromium-driver are "
                    "not installed (apt-get install -y chromium chromium-driver, as `make test` "
                    "does when run as root)")
    profile = tempfile.mkdtemp(prefix="kafka-wire-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--hide-scrollbars", "--force-device-scale-factor=1",
                "--window-size=1366,768", f"--user-data-dir={profile}"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=opts)
    except Exception as exc:  # noqa: BLE001 - any launch failure is a reason to skip, loudly
        shutil.rmtree(profile, ignore_errors=True)
        pytest.skip(f"CONSOLE BROWSER TEST SKIPPED: Chromium would not start: {exc}")
    driver.set_page_load_timeout(WAIT_S)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
