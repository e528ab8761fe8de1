"""Capture's name format rule, and where a capture file may go.

One rule (capture.naming.name_format_error) for every way a format reaches Capture: the
management API and the config loader (through eventhubs.bounds), the command line and
the Spark sink's option. Whatever the format and the namespace and event hub values put
into it, the writer puts no file outside its destination: it refuses the name first."""
from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kafka_wire.capture.events import EventBatch
from kafka_wire.capture.naming import (
    DEFAULT_NAME_FORMAT, TOKENS, check_name_format, file_name, file_name_error, name_format_error,
)
from kafka_wire.capture.writers import CaptureWriter
from kafka_wire.eventhubs import bounds
from kafka_wire.spark.capture_job import CaptureJobSettings
from kafka_wire.spark.sink import CaptureStreamWriter

FMT = DEFAULT_NAME_FORMAT
OUTSIDE = "@outside@"  # stands for an absolute path to the sandbox's "outside" directory
PIECES = st.sampled_from([*TOKENS, "/", "..", ".", "\\", "x", "é", "\x00", "\x1f", "\x7f", "\ud800",
                          "\U0001f600", " ", "%2e%2e", "//", "../", "/..", "..\\", OUTSIDE])
FORMATS = (st.lists(PIECES, max_size=24).map("".join)
           | st.permutations(TOKENS).map("/".join)
           | st.sampled_from(["../" + FMT, "/" + FMT, FMT + "/..", FMT.replace("/", "\\"), FMT + "/",
                              FMT.replace("{Year}", "{Year}/."), "a" * 1016 + FMT, "a" * 1017 + FMT,
                              FMT, "x/" + FMT, FMT.replace("/", "/../", 1), OUTSIDE + "/" + FMT,
                              "{Namespace}/../../" + FMT, FMT.replace("/", "\0", 1)]))
# Namespace and event hub values as a format holds them: the door refuses such names, the writer
# must not rely on it.
VALUES = st.sampled_from(["ns", "..", ".", "", "../..", "a/../..", "\\", "..\\..", "\0", "x\x7f", OUTSIDE,
                          "%2e%2e", "é"]) | st.text(alphabet="./\\x\0", max_size=6)
EXAMPLES = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _events() -> EventBatch:
    return EventBatch([7], [1234], [1_700_000_000_000], [b"k"], [[("h", b"v")]], [b"body"])


def _tree(root: Path) -> set[str]:
    return {os.path.relpath(os.path.join(d, n), root) for d, dirs, files in os.walk(root) for n in dirs + files}


@EXAMPLES
@given(fmt=FORMATS | st.text(max_size=40))
@example(fmt=None)
@example(fmt=42)
def test_capture_asks_the_same_name_format_rule_as_the_management_api_and_the_config_loader(fmt):
    assert name_format_error(fmt) == bounds.name_format_error(fmt)
    if isinstance(fmt, str) and name_format_error(fmt) is not None:
        with pytest.raises(ValueError, match="capture name format"):
            check_name_format(fmt)


@EXAMPLES
@given(fmt=FORMATS)
def test_the_command_line_and_the_spark_sink_refuse_what_the_rule_refuses(fmt):
    with tempfile.TemporaryDirectory() as tmp:
        makers = [lambda: CaptureJobSettings(namespace="ns", hubs=["h"], out_dir=tmp, data_dir=tmp, name_format=fmt)]
        if fmt:  # the sink's option left empty is the default format
            makers.append(lambda: CaptureStreamWriter({"path": tmp, "nameformat": fmt}))
        for make in makers:
            if name_format_error(fmt) is None:
                make()
            else:
                with pytest.raises(ValueError, match="capture name format"):
                    make()


@EXAMPLES
@given(fmt=FORMATS, namespace=VALUES, hub=VALUES, partition=st.integers(0, 1023),
       encoding=st.sampled_from(["avro", "parquet"]))
def test_no_capture_file_is_written_outside_its_destination(fmt, namespace, hub, partition, encoding):
    """The writer given whatever name a format makes (whether or not the format's own
    check passed: the values put into it are not checked there) writes under its
    destination or refuses, having created nothing."""
    with tempfile.TemporaryDirectory() as tmp:
        sandbox = Path(tmp)
        dest, outside = sandbox / "dest" / "capture", sandbox / "outside"
        dest.mkdir(parents=True)
        outside.mkdir()
        swap = lambda s: s.replace(OUTSIDE, str(outside))  # noqa: E731
        name = file_name(swap(fmt), swap(namespace), swap(hub), partition, 1_700_000_000_000, encoding)
        refused = file_name_error(name)
        try:
            writer = CaptureWriter(dest, name, partition, encoding, fsync=False)
        except ValueError as exc:
            assert refused is not None and "refused" in str(exc), (name, exc)
            assert _tree(sandbox) == {"dest", "dest/capture", "outside"}, name  # nothing made
            return
        except OSError as exc:  # a part longer than the file system takes (a blob name may be)
            assert exc.errno == errno.ENAMETOOLONG and refused is None, (name, exc)
            strays = [p for p in _tree(sandbox) if p not in ("dest", "outside") and not p.startswith("dest/capture")]
            assert not strays, (name, strays)
            return
        assert refused is None, name
        writer.write(_events())
        info = writer.close()
        written = Path(info.path).resolve()
        assert dest.resolve() in written.parents and written.is_file(), (name, info.path)
        strays = [p for p in _tree(sandbox) if p not in ("dest", "outside") and not
                  (p == "dest/capture" or p.startswith("dest/capture/"))]
        assert not strays, (name, strays)


@pytest.mark.parametrize("name", ["../x.avro", "/tmp/x.avro", "a/../../x.avro", "a\\..\\x.avro", "a\0b.avro",
                                  "", ".", "a//b.avro", "a/./b.avro", "a/\x7f.avro"])
def test_the_writer_refuses_a_name_that_would_leave_its_destination(tmp_path, name):
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(ValueError, match="capture file name .* is refused"):
        CaptureWriter(dest, name, 0, "avro")
    assert _tree(tmp_path) == {"dest"}
