"""Start-up problems a person can fix are one line naming the problem and the flag to
change, and a non-zero exit: never a traceback. Every listener is checked."""
from __future__ import annotations

import os
import socket
import subprocess
import uuid

import pytest

from tests.cli.helpers import kafka_wire


def _one_line(res) -> str:
    """The one line that says what is wrong (INFO lines of what did start may precede it)."""
    err = res.stderr.strip()
    assert "Traceback" not in err, err
    problems = [ln for ln in err.splitlines() if ln.startswith("kafka-wire:")]
    assert len(problems) == 1, err
    assert problems[0] == err.splitlines()[-1], err
    return problems[0]


def _taken_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock, sock.getsockname()[1]


@pytest.mark.parametrize("flag", ["--listen", "--tls-listen", "--http-listen", "--amqp-listen",
                                  "--https-listen"])
def test_address_in_use_names_the_flag(tmp_path, flag):
    sock, port = _taken_port()
    try:
        args = ["serve", "--data-dir", str(tmp_path / "data"), flag, f"127.0.0.1:{port}"]
        if flag != "--listen":
            args += ["--listen", "127.0.0.1:0"]
        if flag == "--https-listen":  # HTTPS needs the HTTP listener and the TLS certificate
            args += ["--http-listen", "127.0.0.1:0", "--tls-listen", "127.0.0.1:0"]
        elif flag != "--http-listen":
            args += ["--no-http"]
        if flag != "--amqp-listen":
            args += ["--no-amqp"]
        res = kafka_wire(*args)
    finally:
        sock.close()
    assert res.returncode == 1
    line = _one_line(res)
    assert f"127.0.0.1:{port}" in line and "already in use" in line and flag in line


def test_unknown_listen_host_names_the_flag(tmp_path):
    host = f"no-such-host-{uuid.uuid4().hex[:8]}.invalid"
    res = kafka_wire("serve", "--data-dir", str(tmp_path / "data"), "--listen", f"{host}:9092", "--no-http")
    assert res.returncode == 1
    line = _one_line(res)
    assert host in line and "--listen" in line


def test_data_dir_that_is_a_file(tmp_path):
    path = tmp_path / "data"
    path.write_text("not a directory")
    res = kafka_wire("serve", "--data-dir", str(path), "--listen", "127.0.0.1:0", "--no-http")
    assert res.returncode == 1
    line = _one_line(res)
    assert "is a file" in line and "--data-dir" in line and str(path) in line


def test_data_dir_that_cannot_be_created(tmp_path):
    (tmp_path / "file").write_text("")
    path = tmp_path / "file" / "data"
    res = kafka_wire("serve", "--data-dir", str(path), "--listen", "127.0.0.1:0", "--no-http")
    assert res.returncode == 1
    line = _one_line(res)
    assert "cannot create data directory" in line and "--data-dir" in line


def test_unwritable_data_dir(tmp_path):
    data = tmp_path / "ro"
    data.mkdir()
    if os.geteuid() != 0:
        data.chmod(0o555)
    else:  # root writes through permissions: a read-only mount is the honest case
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,ro", "tmpfs", str(data)],
                                 capture_output=True, text=True)
        if mounted.returncode != 0:
            pytest.skip(f"SKIPPED LOUDLY: cannot mount a read-only tmpfs to test an unwritable "
                        f"data directory as root: {mounted.stderr.strip()}")
    try:
        res = kafka_wire("serve", "--data-dir", str(data), "--listen", "127.0.0.1:0", "--no-http")
    finally:
        if os.geteuid() == 0:
            subprocess.run(["umount", str(data)], check=False)
        else:
            data.chmod(0o755)
    assert res.returncode == 1
    line = _one_line(res)
    assert "is not writable" in line and "--data-dir" in line
