"""kafka-python's package without its ``__init__``'s clients until something asks for them.

The broker uses kafka-python's protocol classes and error codes (``kafka.protocol``,
``kafka.errors``), but importing any of them runs ``kafka/__init__.py`` first, which
imports its admin client, consumer and producer (``kafka.admin``, ``kafka.net``...):
~140 ms of a broker's start (of ~0.7 s), and of every ``kafka-wire`` command. So,
unless ``kafka`` is imported already, the package goes into ``sys.modules`` as its
spec makes it, uninitialized: the modules the broker uses (:data:`OURS`) import as
usual; the first name asked of the package itself (``from kafka import KafkaConsumer``,
``kafka.__version__``) or the first import of any other of its modules
(``kafka.cluster``) runs the real ``__init__`` first, once, in its own order (its
modules import each other in cycles it resolves), so a program that uses kafka-python's
clients beside us sees the package it expects."""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import logging
import sys
import threading

# The package's modules the broker imports (kafka_wire, the cli): no need of the __init__.
OURS = ("kafka.errors", "kafka.protocol", "kafka.structs", "kafka.util", "kafka.version")
_OURS = [name.split(".") for name in OURS]


class _Deferred(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Runs the package's real ``__init__`` before the first import of a module of it
    outside :data:`OURS`, or the first name asked of it; then steps aside."""

    def __init__(self, package, spec) -> None:
        self.package, self.spec = package, spec
        self.lock = threading.RLock()  # threads asking the package at once wait for the one running it
        self.running = False
        self.done = False

    def initialize(self, wait: bool = True) -> None:
        if not self.lock.acquire(blocking=wait):
            return
        try:
            if self.done or self.running:  # (running: asked by the __init__ itself, as it runs)
                return
            self.running = True
            try:
                self.spec.loader.exec_module(self.package)
                self.done = True
                self.package.__dict__.pop("__getattr__", None)
                if self in sys.meta_path:
                    sys.meta_path.remove(self)
            finally:
                self.running = False
        finally:
            self.lock.release()

    def attribute(self, name: str):
        self.initialize()
        try:
            return self.package.__dict__[name]
        except KeyError:
            raise AttributeError(f"module 'kafka' has no attribute {name!r}") from None

    # -- the finder: asked first for every import while the __init__ has not run ----------
    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("kafka.") or fullname.split(".", 2)[:2] in _OURS or self.done or self.running:
            return None
        # Not waiting for another thread running it: that thread may need this module's import
        # lock, which ours holds (the import then goes on as if we were not here).
        self.initialize(wait=False)
        if fullname in sys.modules:  # imported by the __init__: that module, not a second copy
            return importlib.machinery.ModuleSpec(fullname, self)
        return None  # (the __init__ did not import it: found as usual)

    def create_module(self, spec):
        return sys.modules[spec.name]

    def exec_module(self, module) -> None:
        pass  # (run already, by the __init__)


def defer_package_init() -> None:
    if "kafka" in sys.modules:
        return
    spec = importlib.util.find_spec("kafka")
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return  # (not installed, or not a package: nothing to defer)
    package = importlib.util.module_from_spec(spec)
    deferred = _Deferred(package, spec)
    package.__getattr__ = deferred.attribute
    sys.meta_path.insert(0, deferred)
    sys.modules["kafka"] = package
    logging.getLogger("kafka").addHandler(logging.NullHandler())  # (what its __init__ does first)
    # The package's own modules ask it for this one ('from kafka import errors') as they import:
    # there already, so they never wait for the __init__ (which may wait for their import).
    importlib.import_module("kafka.errors")
