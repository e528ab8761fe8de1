"""Prints the doc-block harness's tally (tests/docs/test_doc_blocks.py) after the run."""
from __future__ import annotations


def pytest_terminal_summary(terminalreporter):
    from tests.docs import test_doc_blocks

    if test_doc_blocks.OUTCOMES:
        terminalreporter.write_sep("-", "doc blocks")
        terminalreporter.write_line(test_doc_blocks.tally())
