"""The image's entry point (kafka_wire.container, without docker) with an official
Config.json the management API's door would refuse, or one no parser foresaw: the container
stops before anything is made, with one line naming the file, the entry and the rule, and a
non-zero exit, never a traceback (what `docker logs` would show)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.container.harness import CONFIG_JSON, OFFICIAL_ENV, Ports, write_config


def _with_entities(*entities) -> dict:
    config = json.loads(json.dumps(CONFIG_JSON))
    config["UserConfig"]["NamespaceConfig"][0]["Entities"] = list(entities)
    return config


CASES = [
    (_with_entities({"Name": "eh1", "PartitionCount": 2, "ConsumerGroups": [{"Name": "cg1"}]},
                    {"Name": "EH1", "PartitionCount": 1}),
     ["event hub 'EH1'", "case-insensitive", "use 'eh1'", "rule hub-name"]),
    (_with_entities({"Name": "eh1", "PartitionCount": 1, "ConsumerGroups": [{"Name": ["cg1"]}]}),
     ["Entities[0].ConsumerGroups", "must be text"]),
    (_with_entities({"Name": {"../x": 1}, "PartitionCount": 1}), ["Entities[0].Name", "must be text"]),
]


@pytest.mark.parametrize("config,wanted", CASES, ids=["case-twins", "group-name-array", "name-object"])
def test_a_config_json_the_door_would_refuse_stops_the_container(tmp_path, config, wanted):
    path = write_config(tmp_path, config)
    data = tmp_path / "data"
    env = {**os.environ, **OFFICIAL_ENV, **Ports().env(), "KAFKA_WIRE_CONFIG": str(path),
           "KAFKA_WIRE_DATA_DIR": str(data)}
    res = subprocess.run([sys.executable, "-m", "kafka_wire.container"], env=env, capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 2, res.stderr
    err = res.stderr.strip()
    assert "Traceback" not in err, err
    line = err.splitlines()[-1]
    assert [ln for ln in err.splitlines() if ln.startswith("kafka-wire:")] == [line], err
    assert line.startswith(f"kafka-wire: {path}: "), line
    for part in wanted:
        assert part in line, (part, line)
    assert "Emulator Service is Successfully Up!" not in res.stdout
    assert not data.exists(), sorted(str(p) for p in data.rglob("*"))
