"""kafka-python's package without its ``__init__``'s clients until something asks for them.

The broker uses kafka-python's protocol classes and error codes (``kafka.protocol``,
``kafka.errors``), but importing any of them runs ``kafka/__init__.py`` first, which
imports its admin client, consumer and producer (``kafka.admin``, ``kafka.net``...):
~150 ms of a broker's start (of ~0.5 s), and of every ``kafka-wire`` command. So,
unless ``kafka`` is imported already, the package goes into ``sys.modules`` as its
spec makes it, uninitialized: its submodules import as usual, and the first name asked
of the package itself (``from kafka import KafkaConsumer``, ``kafka.__version__``) runs
the real ``__init__`` then, once, so a program that uses kafka-python's clients beside
us sees the package it expects."""
from __future__ import annotations

import importlib.util
import logging
import sys


def defer_package_init() -> None:
    if "kafka" in sys.modules:
        return
    spec = importlib.util.find_spec("kafka")
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return  # (not installed, or not a package: nothing to defer)
    package = importlib.util.module_from_spec(spec)

    def __getattr__(name: str):
        del package.__dict__["__getattr__"]  # (the real __init__ runs once, without us)
        spec.loader.exec_module(package)
        return getattr(package, name)

    package.__getattr__ = __getattr__
    sys.modules["kafka"] = package
    logging.getLogger("kafka").addHandler(logging.NullHandler())  # (what its __init__ does first)
