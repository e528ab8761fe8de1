"""Azurite's blob service for tests: the storage the Azure SDKs' checkpoint store
and Capture's Blob destination write to. ``make test`` installs azurite with
`npm install --prefix tests/js`; without node or azurite a test using it SKIPS
with the reason."""
from __future__ import annotations

import shutil
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from kafka_wire.testing.ports import free_port
from kafka_wire.testing.processes import stop_processes

JS = Path(__file__).resolve().parent / "js"
AZURITE = JS / "node_modules" / ".bin" / "azurite-blob"
# Azurite's well-known development account (azurite/dist/src/blob/utils/constants.js).
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/"
               "K1SZFPTOtr/KBHBeksoGMGw==")


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


@contextmanager
def running_azurite(location: Path):
    """Azurite on a free port, storing under ``location``; yields its connection string."""
    if shutil.which("node") is None:
        pytest.skip("AZURITE TEST SKIPPED: `node` is not installed (make test installs azurite with "
                    "`npm install --prefix tests/js` when npm exists)")
    if not (JS / "node_modules" / "azurite" / "package.json").is_file() or not AZURITE.exists():
        pytest.skip("AZURITE TEST SKIPPED: azurite is not installed; run `npm install --prefix tests/js` "
                    "(make test does it when npm exists)")
    port = free_port()
    proc = subprocess.Popen(
        [str(AZURITE), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location",
         str(location), "--silent", "--skipApiVersionCheck", "--disableTelemetry"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while proc.poll() is None and not _accepts(port) and time.monotonic() < deadline:
            time.sleep(0.1)
        if proc.poll() is not None or not _accepts(port):
            err = b"" if proc.poll() is None else proc.stderr.read()
            pytest.fail(f"azurite-blob did not listen on {port}: {err.decode(errors='replace')}")
        yield (f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};"
               f"BlobEndpoint=http://127.0.0.1:{port}/{ACCOUNT};")
    finally:
        stop_processes([proc], 10)  # by its pid: the .bin entry is azurite's script, run by node itself
        proc.stderr.close()
