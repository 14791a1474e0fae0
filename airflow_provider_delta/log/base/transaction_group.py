"""The multi-table transactions RFC's table-side records (delta-io/delta#7437).

Every participant's staged commit carries a ``transactionGroup`` action (the
transaction id, the complete participant set, the coordinating catalog), identical in
all participants, and a ``commitInfo`` tag naming the transaction, so
any one staged commit reveals the whole group (recovery, orphan cleanup, provenance).
"""
from __future__ import annotations

from typing import Any, Iterable

#: commitInfo tag holding the multi-table transaction id
TRANSACTION_ID_TAG = "delta.multiTableTransaction.transactionId"
#: the action's key in a commit file
TRANSACTION_GROUP_ACTION = "transactionGroup"


def transaction_group(transaction_id: str, participants: Iterable[tuple[str, int]],
                      coordinating_catalog: str) -> dict[str, Any]:
    """The ``transactionGroup`` action; ``participants`` are (table id, proposed version),
    sorted by table id so every participant's copy is byte-identical."""
    return {TRANSACTION_GROUP_ACTION: {
        "transactionId": transaction_id,
        "participants": [{"tableId": t, "proposedVersion": int(v)} for t, v in sorted(participants)],
        "coordinatingCatalog": coordinating_catalog,
    }}


def group_of(actions: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """The ``transactionGroup`` of a commit's actions, or None for an ordinary commit."""
    for a in actions:
        g = a.get(TRANSACTION_GROUP_ACTION)
        if g is not None:
            return g
    return None
