"""The README's management example, as a user pastes it: extracted from README.md,
run as its own Python process in a directory whose ``data`` is the broker's data
directory, with only the HTTPS port put in. It must make the hub it says it makes."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from kafka_wire.testing import EmulatedBroker

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_block(marker: str) -> str:
    """The fenced Python block that follows the ``doc-test`` comment naming ``marker``."""
    text = README.read_text()
    at = text.index(marker)
    found = re.search(r"```python\n(.*?)```", text[at:], re.S)
    assert found, f"no python block after {marker!r} in README.md"
    return found.group(1)


def test_the_readme_management_example_makes_a_hub(tmp_path):
    code = readme_block("tests/docs/test_readme_management.py")
    with EmulatedBroker(tmp_path / "data", tls=True, http=True) as broker:
        port = broker.https_url.rsplit(":", 1)[1]
        assert "https://localhost:5443" in code
        work = tmp_path / "user"
        work.mkdir()
        os.symlink(broker.data_dir, work / "data")
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        run = subprocess.run([sys.executable, "-c", code.replace("localhost:5443", f"localhost:{port}")],
                             cwd=work, env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        assert run.stdout.split() == ["orders", "4"]
        view = broker.call(lambda: broker.broker.services.default.topics.get("orders"))
        assert view is not None and view.partitions == 4
