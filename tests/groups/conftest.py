"""A banner at the end of the run when the kafkajs test was skipped (no node,
or kafkajs not installed): a skip must not look like a pass."""
from __future__ import annotations


def pytest_terminal_summary(terminalreporter):
    reasons = set()
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(report, "longrepr", None)
        message = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""
        if "KAFKAJS TEST SKIPPED" in message:
            reasons.add(message)
    if reasons:
        terminalreporter.write_sep("!", "kafkajs client test was SKIPPED", red=True, bold=True)
        for reason in sorted(reasons):
            terminalreporter.write_line(reason, red=True)
