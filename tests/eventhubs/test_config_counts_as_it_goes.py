"""The config loader checks each hub of a file against those before it (the door's
new_hub) from counts it keeps as it goes: no recount and no twin scan of the hubs before
it per hub (a file of n hubs was n^2/2 comparisons: 6,000 hubs took 9.6 s to load)."""
from __future__ import annotations

import pytest

from kafka_wire.eventhubs import config_file, policy

HEAD = """default_namespace = "bignamespace"
[limits]
hubs_per_namespace = 2000
[namespaces.bignamespace]
tier = "Dedicated"
capacity_units = 1
"""


def toml(tmp_path, names):
    path = tmp_path / "kafka-wire.toml"
    path.write_text(HEAD + "".join(f"[namespaces.bignamespace.eventhubs.{n}]\npartitions = 2\n" for n in names))
    return path


def test_a_file_of_many_hubs_is_checked_without_walking_the_hubs_before_each(tmp_path, monkeypatch):
    walks = []
    real_among, real_twin = policy.HubCount.among, policy._twin_among
    monkeypatch.setattr(policy.HubCount, "among", classmethod(lambda cls, hubs: walks.append("among")
                                                             or real_among.__func__(cls, hubs)))
    monkeypatch.setattr(policy, "_twin_among", lambda hubs, name: walks.append("twin") or real_twin(hubs, name))
    model, _ = config_file.load(toml(tmp_path, [f"h{i}" for i in range(300)]))
    assert len(model.namespaces["bignamespace"].hubs) == 300
    assert walks == []


def test_counts_kept_as_it_goes_refuse_what_a_recount_refuses(tmp_path):
    # a twin in another case, however far after its hub
    with pytest.raises(ValueError, match="'Orders'.*case"):
        config_file.load(toml(tmp_path, ["Orders"] + [f"h{i}" for i in range(50)] + ["orders"]))
    # the broker's partition bound: hubs of 2 partitions, 100 allowed: the 51st is refused
    path = toml(tmp_path, [f"h{i}" for i in range(60)])
    path.write_text(path.read_text().replace("hubs_per_namespace = 2000", "partitions_per_namespace = 100"))
    with pytest.raises(ValueError, match="event hub 'h50'") as refused:
        config_file.load(path)
    assert "100" in str(refused.value), refused.value
