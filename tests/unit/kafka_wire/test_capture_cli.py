"""``kafka-wire capture`` arguments and the capture jobs a config asks ``serve`` to run."""
from __future__ import annotations

import argparse

import pytest

from kafka_wire.capture_cli import add_parser, settings_from_args
from kafka_wire.capture_jobs import jobs_from_model
from kafka_wire.eventhubs.config_file import load

TOML = """
[namespaces.contoso.eventhubs.orders.capture]
enabled = true
destination = "cap"
interval_seconds = 60
size_limit_bytes = 10485760
skip_empty_archives = true
encoding = "Parquet"

[namespaces.contoso.eventhubs.payments.capture]
enabled = true
destination = "cap"
interval_seconds = 60
size_limit_bytes = 10485760
skip_empty_archives = true
encoding = "Parquet"

[namespaces.contoso.eventhubs.audit.capture]
enabled = true
destination = "audit-cap"

[namespaces.contoso.eventhubs.quiet]
partitions = 2
"""


def parse(*argv: str):
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    return parser.parse_args(["capture", *argv])


def test_the_command_line_becomes_plain_settings(tmp_path):
    s = settings_from_args(parse("--data-dir", "d", "--hub", "a", "--hub", "b", "--hub", "a", "--out", "o",
                                 "--format", "parquet", "--interval-seconds", "5", "--size-mb", "0.5",
                                 "--skip-empty", "--once", "--no-partition-key"))
    assert (s.hubs, s.encoding, s.interval_seconds, s.size_limit_bytes) == (["a", "b"], "parquet", 5, 524288)
    assert s.skip_empty and s.once and not s.partition_key and s.data_dir == "d" and s.bootstrap is None
    with pytest.raises(ValueError, match="nine tokens"):
        settings_from_args(parse("--data-dir", "d", "--hub", "a", "--out", "o", "--name-format", "{Year}"))
    with pytest.raises(SystemExit):
        parse("--data-dir", "d", "--bootstrap", "h:1", "--hub", "a", "--out", "o")


def test_serve_runs_one_job_per_capture_enabled_hub_from_when_it_first_ran(tmp_path):
    path = tmp_path / "kw.toml"
    path.write_text(TOML.replace('encoding = "Parquet"\n\n[namespaces.contoso.eventhubs.audit.capture]',
                                 'encoding = "Parquet"\nbackfill = true\n\n[namespaces.contoso.eventhubs.audit.capture]'))
    model, _ = load(path)
    first_seen: dict = {}
    jobs = sorted(jobs_from_model(model, tmp_path / "data", 1000, first_seen), key=lambda j: j.hubs)
    assert [(j.namespace, j.hubs, j.out_dir, j.encoding) for j in jobs] == [
        ("contoso", ["audit"], "audit-cap", "avro"), ("contoso", ["orders"], "cap", "parquet"),
        ("contoso", ["payments"], "cap", "parquet")]
    assert jobs[1].interval_seconds == 60 and jobs[1].size_limit_bytes == 10485760 and jobs[1].skip_empty
    assert jobs[0].interval_seconds == 300 and not jobs[0].skip_empty and not jobs[0].once
    # Capture starts when the broker first ran it (payments asked for a backfill)...
    assert [j.starting_position for j in jobs] == ["1000", "1000", "earliest"]
    # ...and a later look at the same model keeps that time, so the jobs stand unchanged.
    again = sorted(jobs_from_model(model, tmp_path / "data", 9000, first_seen), key=lambda j: j.hubs)
    assert again == jobs
    # Each hub has a checkpoint of its own: a job restarted with other settings goes on.
    assert len({j.checkpoint for j in jobs}) == 3


def test_a_management_api_capture_into_a_listed_storage_account_uploads_there(tmp_path):
    from kafka_wire.capture_jobs import jobs_for
    from kafka_wire.eventhubs.model import CaptureSettings
    from kafka_wire.rest.management.capture import settings as capture_settings

    account = "/subscriptions/s/resourceGroups/g/providers/Microsoft.Storage/storageAccounts/"
    desc = {"enabled": True, "encoding": "Parquet", "intervalInSeconds": 120, "sizeLimitInBytes": 10485760,
            "destination": {"name": "EventHubArchive.AzureBlockBlob",
                            "properties": {"storageAccountResourceId": account + "devstoreaccount1",
                                           "blobContainer": "lake"}}}
    accounts = {"devstoreaccount1": "UseDevelopmentStorage=true"}
    listed = capture_settings(desc, CaptureSettings(), tmp_path, 5000, "hub", accounts)
    assert (listed.storage_connection_string, listed.blob_container, listed.enabled_at_ms) == \
        ("UseDevelopmentStorage=true", "lake", 5000)
    [job] = jobs_for([("ns", "orders", listed)], tmp_path / "data", 9000)
    assert (job.blob_connection_string, job.blob_container, job.encoding) == ("UseDevelopmentStorage=true", "lake",
                                                                              "parquet")
    assert job.out_dir == str(tmp_path / "devstoreaccount1" / "lake") and job.starting_position == "5000"
    # An account kafka-wire does not know stands as a local directory.
    desc["destination"]["properties"]["storageAccountResourceId"] = account + "elsewhere"
    local = capture_settings(desc, CaptureSettings(), tmp_path, 5000, "hub", accounts)
    [job] = jobs_for([("ns", "orders", local)], tmp_path / "data", 9000)
    assert job.blob_connection_string is None and job.out_dir == str(tmp_path / "elsewhere" / "lake")


def test_the_config_file_names_storage_accounts_and_blob_destinations(tmp_path):
    path = tmp_path / "kw.toml"
    path.write_text('[storage_accounts]\ndevstoreaccount1 = "UseDevelopmentStorage=true"\n'
                    '[namespaces.contoso.eventhubs.orders.capture]\nenabled = true\nblob_container = "lake"\n'
                    'storage_connection_string = "UseDevelopmentStorage=true"\n')
    model, _ = load(path)
    assert model.storage_accounts == {"devstoreaccount1": "UseDevelopmentStorage=true"}
    [job] = jobs_from_model(model, tmp_path / "data", 1)
    assert (job.blob_container, job.blob_connection_string) == ("lake", "UseDevelopmentStorage=true")
    path.write_text('[namespaces.contoso.eventhubs.orders.capture]\nenabled = true\n'
                    'storage_connection_string = "UseDevelopmentStorage=true"\n')
    with pytest.raises(ValueError, match="needs blob_container"):
        load(path)
