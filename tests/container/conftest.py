"""The session-scoped ``image`` fixture: `make image` once (its failure fails the tests), or,
where no docker daemon runs, every docker test skipped with the reason and a banner at the end
of the run (a skip must not look like a pass). Figures the
tests measure (image size, time to ready, `docker stop`) are printed at the end too and kept in
test-artifacts/container.json."""
from __future__ import annotations

import json

import pytest

from tests.container.harness import IMAGE, ROOT, build_image, docker, docker_unavailable

_SKIPPED: list[str] = []
FIGURES: dict[str, object] = {}


@pytest.fixture(scope="session")
def image() -> str:
    if _SKIPPED:
        pytest.skip(_SKIPPED[0])
    why = docker_unavailable()
    if why:
        reason = f"CONTAINER TESTS SKIPPED: {why}"
        _SKIPPED.append(reason)
        pytest.skip(reason)
    failed = build_image()  # a daemon runs: a Dockerfile that does not build is a failure
    if failed:
        pytest.fail(failed, pytrace=False)
    FIGURES["image"] = IMAGE
    FIGURES["image_size_bytes"] = int(docker("image", "inspect", "-f", "{{.Size}}", IMAGE).stdout)
    return IMAGE


def pytest_terminal_summary(terminalreporter):
    if _SKIPPED:
        terminalreporter.write_sep("!", "container tests were SKIPPED", red=True, bold=True)
        terminalreporter.write_line(_SKIPPED[0], red=True)
    if FIGURES:
        (ROOT / "test-artifacts").mkdir(exist_ok=True)
        (ROOT / "test-artifacts" / "container.json").write_text(json.dumps(FIGURES, indent=2))
        terminalreporter.write_sep("-", "container figures (test-artifacts/container.json)")
        for key, value in FIGURES.items():
            terminalreporter.write_line(f"{key}: {value}")
