"""``spark-submit kafka_wire/cli.py`` (the README's cluster commands) runs the CLI as a
file, which puts kafka_wire/ first on sys.path: a module or package there named like one
of the standard library's would be imported in its place (kafka_wire/http once hid
``http.client`` from ``urllib.request``, and the CLI failed to start)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import kafka_wire

PACKAGE = Path(kafka_wire.__file__).resolve().parent


def test_no_module_of_kafka_wire_is_named_like_the_standard_librarys():
    names = {p.stem if p.suffix == ".py" else p.name for p in PACKAGE.iterdir()
             if p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists())}
    assert not names & set(sys.stdlib_module_names)


def test_the_cli_runs_as_a_file_with_every_subcommand_parsed():
    # build_parser imports every subcommand's module, the fault CLI's urllib.request among them
    done = subprocess.run([sys.executable, str(PACKAGE / "cli.py"), "fault", "--help"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "add" in done.stdout
