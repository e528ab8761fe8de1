"""`serve` never needs the capture extra unless a hub enables Capture; then, and for
`kafka-wire capture`, a missing extra is one line saying how to install it.

The subprocesses run where pyspark, pyarrow and fastavro cannot be imported, as on
the core install `make run` makes."""
from __future__ import annotations

from pathlib import Path

from confluent_kafka.admin import AdminClient

from tests.cli.helpers import READY, Serve, kafka_wire, without_capture_extra

CONFIG_JSON = Path(__file__).parents[1] / "eventhubs" / "data" / "Config.json"
EMULATOR_CS = ("Endpoint=sb://localhost;SharedAccessKeyName=RootManageSharedAccessKey;"
               "SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;")

TOML_PLAIN = """
[namespaces.plain-ns.eventhubs.orders]
partitions = 2
"""

TOML_CAPTURE = """
[namespaces.capture-ns.eventhubs.orders]
partitions = 2
[namespaces.capture-ns.eventhubs.orders.capture]
enabled = true
destination = "{out}"
"""


def _bootstrap(out: str) -> str:
    line = next(ln for ln in out.splitlines() if READY in ln)
    return line.split("bootstrap.servers=")[1].split()[0]


def _serve(tmp_path, config: Path) -> tuple[str, Serve]:
    serve = Serve("--config", str(config), "--data-dir", str(tmp_path / "data"), "--listen",
                  "127.0.0.1:0", "--no-http", env=without_capture_extra(tmp_path),
                  log=tmp_path / "serve.log")
    return serve.wait_for(READY), serve


def test_config_json_serves_without_the_capture_extra(tmp_path):
    out, serve = _serve(tmp_path, CONFIG_JSON)
    try:
        admin = AdminClient({"bootstrap.servers": _bootstrap(out), "security.protocol": "SASL_PLAINTEXT",
                             "sasl.mechanism": "PLAIN", "sasl.username": "$ConnectionString",
                             "sasl.password": EMULATOR_CS})
        assert len(admin.list_topics(timeout=10).topics["eh1"].partitions) == 2
    finally:
        assert serve.stop() == 0
    out = serve.output()
    assert "Traceback" not in out and "capture" not in out.lower(), out


def test_toml_without_capture_serves_without_the_capture_extra(tmp_path):
    config = tmp_path / "plain.toml"
    config.write_text(TOML_PLAIN)
    out, serve = _serve(tmp_path, config)
    try:
        admin = AdminClient({"bootstrap.servers": _bootstrap(out)})
        assert "orders" in admin.list_topics(timeout=10).topics
    finally:
        assert serve.stop() == 0
    assert "Traceback" not in serve.output()


def test_capture_hub_without_the_extra_says_so_once_and_serves(tmp_path):
    config = tmp_path / "capture.toml"
    config.write_text(TOML_CAPTURE.format(out=tmp_path / "capture"))
    out, serve = _serve(tmp_path, config)
    try:
        admin = AdminClient({"bootstrap.servers": _bootstrap(out)})
        assert "orders" in admin.list_topics(timeout=10).topics
    finally:
        assert serve.stop() == 0
    out = serve.output()
    lines = [ln for ln in out.splitlines() if "capture extra" in ln]
    assert len(lines) == 1, out
    assert "Capture is off for capture-ns/orders" in lines[0]
    assert "pip install -e '.[capture]'" in lines[0] and "kafka-wire[capture]" in lines[0]
    assert "Traceback" not in out


def test_capture_command_without_the_extra_is_one_line_and_exit_2(tmp_path):
    res = kafka_wire("capture", "--data-dir", str(tmp_path), "--hub", "orders", "--out",
                     str(tmp_path / "out"), env=without_capture_extra(tmp_path))
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines() == [res.stderr.strip()]
    assert "capture extra" in res.stderr and "pip install" in res.stderr
