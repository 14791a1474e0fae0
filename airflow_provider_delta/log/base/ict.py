"""In-commit timestamps (ICT): the rules a writer follows, in one place.

With the ``inCommitTimestamp`` writer feature active, a commit's time is the
``commitInfo.inCommitTimestamp`` written into it, not the file's mtime (which
copies, restores and backfills change). The writer side of the protocol is:

- the timestamp is ``max(now, previous commit's ICT + 1 ms)``, so commit times
  are strictly increasing even when the writer's clock goes backwards or two
  machines disagree; after losing a commit race it is recomputed against the
  winner;
- ``commitInfo`` must be the first action of the commit;
- when ICT is turned on for a table that already has commits, the same
  ``metaData`` that sets ``delta.enableInCommitTimestamps=true`` records
  ``delta.inCommitTimestampEnablementVersion``/``...Timestamp``, and that
  timestamp must exceed the previous commit file's modification time.

The clock is a plain function so tests (and callers with a better time source)
can replace it: ``Transaction(table, clock=...)``.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Iterable

from .actions import Metadata, Protocol
from .features import ICT_ENABLE_PROPERTY as ENABLE_PROPERTY
from .features import ICT_ENABLEMENT_TIMESTAMP_PROPERTY as ENABLEMENT_TIMESTAMP_PROPERTY
from .features import ICT_ENABLEMENT_VERSION_PROPERTY as ENABLEMENT_VERSION_PROPERTY
from .features import ICT_FEATURE, ICT_FEATURE_NAMES

__all__ = ["ICT_FEATURE", "ICT_FEATURE_NAMES", "ENABLE_PROPERTY", "ENABLEMENT_VERSION_PROPERTY",
           "ENABLEMENT_TIMESTAMP_PROPERTY", "Clock", "system_clock", "property_enabled", "has_feature",
           "is_enabled", "enablement", "next_timestamp", "timestamp_of", "with_enablement", "without_enablement"]

Clock = Callable[[], int]


def system_clock() -> int:
    """Wall-clock time in epoch milliseconds (the default clock of every transaction)."""
    return time.time_ns() // 1_000_000


def property_enabled(configuration: dict[str, str] | None) -> bool:
    return str((configuration or {}).get(ENABLE_PROPERTY, "false")).strip().lower() == "true"


def has_feature(protocol: Protocol | None) -> bool:
    return protocol is not None and any(protocol.has_writer_feature(n) for n in ICT_FEATURE_NAMES)


def is_enabled(protocol: Protocol | None, metadata: Metadata | None) -> bool:
    """ICT is active: writer 7 with the feature listed and the table property true."""
    return (protocol is not None and protocol.min_writer_version >= 7 and has_feature(protocol)
            and metadata is not None and property_enabled(metadata.configuration))


def enablement(protocol: Protocol, metadata: Metadata) -> tuple[int, int | None] | None:
    """(enablement version, enablement timestamp) when ICT is on; (0, None) if on since creation.

    Commits from the enablement version on take their time from ``inCommitTimestamp``;
    earlier ones from their (monotonized) file modification time.
    """
    if not is_enabled(protocol, metadata):
        return None
    conf = metadata.configuration
    v = conf.get(ENABLEMENT_VERSION_PROPERTY)
    t = conf.get(ENABLEMENT_TIMESTAMP_PROPERTY)
    if v is None or t is None:
        return (0, None)
    return (int(v), int(t))


def next_timestamp(clock: Clock, previous: int | None) -> int:
    """``max(now, previous + 1)``: strictly after the commit this one follows."""
    now = int(clock())
    return now if previous is None else max(now, int(previous) + 1)


def timestamp_of(actions: Iterable[dict[str, Any]]) -> int | None:
    """The ``inCommitTimestamp`` in a commit's actions (None when it has none)."""
    for action in actions:
        info = action.get("commitInfo")
        if isinstance(info, dict):
            value = info.get("inCommitTimestamp")
            return int(value) if value is not None else None
    return None


def with_enablement(metadata: Metadata, version: int, timestamp: int) -> Metadata:
    """``metadata`` carrying the provenance of enabling ICT at ``version``/``timestamp``."""
    return metadata.with_configuration({ENABLEMENT_VERSION_PROPERTY: str(version),
                                        ENABLEMENT_TIMESTAMP_PROPERTY: str(timestamp)})


def without_enablement(metadata: Metadata) -> Metadata:
    """``metadata`` without enablement provenance (when ICT is turned off again, as Delta Spark does)."""
    return metadata.with_configuration({ENABLEMENT_VERSION_PROPERTY: None, ENABLEMENT_TIMESTAMP_PROPERTY: None})
