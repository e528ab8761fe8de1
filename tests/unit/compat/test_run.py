"""make compat's table of SDKs stays true to the repository: every test file it runs exists
and selects tests, and every SDK has a declared oldest release that its bounds admit."""
from __future__ import annotations

import json
import re

import pytest

from compat import run


@pytest.mark.parametrize("sdk", run.SDKS, ids=[s.name for s in run.SDKS])
def test_each_sdk_has_existing_test_files_and_a_declared_oldest_release(sdk):
    files = [a for a in sdk.tests if a.endswith(".py")]
    assert files and all((run.ROOT / f).is_file() for f in files), files
    assert re.fullmatch(r"\d+\.\d+\.\d+", run.oldest(sdk))


def test_pinned_dists_are_the_declared_packages():
    install, test = run.setup_requirements()
    declared = {run.requirement_name(r) for r in install + test}
    declared |= set(json.loads((run.JS / "package.json").read_text())["dependencies"])
    for sdk in run.SDKS:
        for dist in sdk.dists:
            assert (dist if sdk.npm else run.norm(dist)) in declared, dist
