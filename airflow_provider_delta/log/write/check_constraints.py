"""A new CHECK constraint must hold for the rows already in the table (PROTOCOL.md "CHECK Constraints").

A writer that adds ``delta.constraints.<name>`` must first validate the existing data against it;
Delta Spark's ``ALTER TABLE ADD CONSTRAINT`` counts the rows that violate it and fails with
``DELTA_NEW_CHECK_CONSTRAINT_VIOLATION`` if there are any (and refuses the property through SET
TBLPROPERTIES altogether: ``DELTA_ADD_CONSTRAINTS``). This package does not evaluate SQL, so it cannot
validate rows: it lets a commit add or change a constraint only while the table has no live file, and
refuses otherwise with :class:`UnsupportedFeatureError` (add it with Delta Spark).
"""
from __future__ import annotations

from ..base.actions import Metadata
from ..base.errors import UnsupportedFeatureError
from ..base.features import CHECK_CONSTRAINT_PREFIX
from ..read.snapshot import Snapshot


def check_new_constraints_hold(old: Metadata | None, new: Metadata, snap: Snapshot | None) -> bool:
    """Refuse adding or changing a CHECK constraint on a table that has rows to validate.

    True when the commit adds or changes one (on an empty table): its validation read the whole
    table, so, as Delta Spark's ADD CONSTRAINT (which reads every file), the commit must conflict
    with rows appended concurrently rather than land a constraint they may violate.
    """
    before = old.configuration if old is not None else {}
    added = sorted(k for k, v in new.configuration.items()
                   if k.lower().startswith(CHECK_CONSTRAINT_PREFIX) and before.get(k) != v)
    if not added:
        return False
    if snap is None or snap.num_files() == 0:
        return True
    raise UnsupportedFeatureError(
        f"CHECK constraint {added[0][len(CHECK_CONSTRAINT_PREFIX):]!r} ({new.configuration[added[0]]}) must be "
        f"validated against the {snap.num_files()} data file(s) already in the table, and this package does "
        "not evaluate SQL; add it with Delta Spark (ALTER TABLE ... ADD CONSTRAINT), which checks the rows",
        feature="checkConstraints")
