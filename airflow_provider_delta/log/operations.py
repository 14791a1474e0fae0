"""The modules behind :class:`~.table.DeltaTable`'s write, maintenance and change-feed methods,
each imported the first time one of those methods runs.

Most processes that open a table only read a snapshot of it: a sensor poke, a task that
pins a version, a trigger poll. Each is a fresh interpreter, and importing the write
engine along with ``DeltaTable`` (writer, transaction, committer, checkpoint writer,
cleanup, vacuum, compaction, managed-commit conversions: some thirty modules) cost every
one of them time for code it never runs.

How: ``DeltaTable`` reaches each of these modules as an attribute of this one
(``operations.writer.write_table(...)``), and the module-level ``__getattr__`` (PEP 562)
imports it on first access and keeps it here, so later calls are a plain attribute
lookup. Two other ways were rejected: imports inside each method would scatter the
dependency over the class (and look like imports hidden to dodge a cycle, which the
project forbids); splitting ``DeltaTable`` into a read class and a write subclass would
change the public type users construct. The imports below are ordinary ``from .
import`` statements, so ``tests/architecture`` sees every dependency and checks its
tier; no cycle is involved (none of these modules imports ``table``).
"""
from __future__ import annotations

from types import ModuleType


def __getattr__(name: str) -> ModuleType:
    if name == "writer":
        from .write import writer as module
    elif name == "transaction":
        from .write import transaction as module
    elif name == "create":
        from .write import create as module
    elif name == "checkpoint":
        from .maintenance import checkpoint as module
    elif name == "compaction":
        from .maintenance import compaction as module
    elif name == "cleanup":
        from .maintenance import cleanup as module
    elif name == "vacuum":
        from .maintenance import vacuum as module
    elif name == "optimize":
        from .write import optimize as module
    elif name == "managed":
        from .write import managed as module
    elif name == "restore":
        from .write import restore as module
    elif name == "clone":
        from .write import clone as module
    elif name == "change_feed":
        from .read import change_feed as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = module
    return module
