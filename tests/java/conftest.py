"""The session-scoped ``java`` fixture: see :mod:`tests.java.harness`.

Compiles tests/java/src/*.java once per session; if Java or the Kafka jars
are missing every Java test is skipped with the reason, and a banner at the
end of the run says so (a skip must not look like a pass).
"""
from __future__ import annotations

import pytest

from tests.java.harness import JavaUnavailable, compile_sources

_SKIPPED: list[str] = []


@pytest.fixture(scope="session")
def java():
    try:
        runner = compile_sources()
    except JavaUnavailable as exc:
        reason = f"JAVA TESTS SKIPPED: {exc}"
        _SKIPPED.append(reason)
        pytest.skip(reason)
    yield runner
    runner.kill_all()


def pytest_terminal_summary(terminalreporter):
    if _SKIPPED:
        terminalreporter.write_sep("!", "Java client tests were SKIPPED", red=True, bold=True)
        terminalreporter.write_line(_SKIPPED[0], red=True)
