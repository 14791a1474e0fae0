"""Machinery of the property-based writer tests (tests/log/test_property_writers.py and its Spark
variant in tests/interop): random operations on one table, some interleaved with a second writer.

Every operation of ours is a :class:`Transaction` pinned to the version it opens at: it reads what
the operation depends on, gathers its actions, and - when the step is interleaved - a second writer
(another ``DeltaTable`` object on the same path) commits one operation before ours commits. Our
commit then either lands or fails with one of the concurrent-modification errors.

The rows are modelled logically (a multiset of ``(id, p)``), and after every step the table must
hold exactly the rows of some serial order of the operations that committed: winner then ours, or
ours then winner (or only the winner's when ours failed). That is what Serializable (Delta Spark's
default isolation level) promises; a lost append, a resurrected row or a half-applied overwrite
breaks it. The rows are read back by a fresh ``DeltaTable`` and by deltalake (and, in the Spark
variant, by Delta Spark), so every committed log must also be valid for all of them.
"""
from __future__ import annotations

import itertools
import os
import sys
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import strategies as st

from airflow_provider_delta.log import (AddFile, ConcurrentModificationError, DeltaTable, InvalidArgumentError,
                                        UnsupportedFeatureError)

sys.path.insert(0, os.path.dirname(__file__))
from test_deletion_vectors import bitmap_array, z85_encode  # noqa: E402 - the DV encoder of the DV tests

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])
PARTITIONS = ("a", "b")
Rows = Counter


@dataclass(frozen=True)
class Op:
    """One logical operation: ``kind`` in append, overwrite, delete_partition, delete_dv, set_property."""

    kind: str
    p: str = "a"
    n: int = 1
    prop: tuple[str, str | None] = ("team", "x")


ops = st.one_of(
    st.builds(Op, st.just("append"), st.sampled_from(PARTITIONS), st.integers(1, 3)),
    st.builds(Op, st.just("overwrite"), st.sampled_from(PARTITIONS), st.integers(1, 3)),
    st.builds(Op, st.just("delete_partition"), st.sampled_from(PARTITIONS)),
    st.builds(Op, st.just("delete_dv"), st.sampled_from(PARTITIONS), st.integers(1, 2)),
    st.builds(Op, st.just("set_property"), prop=st.tuples(
        st.sampled_from(["team", "delta.appendOnly", "delta.enableDeletionVectors"]),
        st.sampled_from(["true", "false", None]))),
)
#: a step: our operation, and the second writer's (None: not interleaved)
steps = st.lists(st.tuples(ops, st.one_of(st.none(), ops)), min_size=1, max_size=6)


class World:
    """One table, our writer, the second writer and the logical rows."""

    def __init__(self, path: str):
        self.path = path
        self.ids = itertools.count(1)
        self.table = DeltaTable.create(path, SCHEMA, partition_by=["p"],
                                       properties={"delta.enableDeletionVectors": "true"})
        self.table.auto_checkpoint = False
        self.other = DeltaTable(path)
        self.other.auto_checkpoint = False
        self.rows: Rows = Counter()
        #: when set, the second writer's appends go through it (the Spark variant: Delta Spark INSERTs)
        self.foreign_append: Callable[[str, list[int]], None] | None = None

    # ----------------------------------------------------------- one operation as a transaction
    def _write_file(self, p: str, ids: list[int]) -> AddFile:
        rel = f"p={p}/part-{uuid.uuid4()}.parquet"
        full = os.path.join(self.path, rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), full)
        return AddFile(rel, os.path.getsize(full), {"p": p}, 1, True, f'{{"numRecords":{len(ids)}}}')

    def prepare(self, table: DeltaTable, op: Op) -> tuple[Any, Callable[[Rows], Rows]]:
        """Open ``op`` as a pinned transaction on ``table``; return it and its logical effect."""
        txn = table.transaction(operation=op.kind.upper(), read_version=table.latest_version())
        if op.kind == "append":
            ids = [next(self.ids) for _ in range(op.n)]
            txn.add_file(self._write_file(op.p, ids))
            return txn, lambda rows: rows + Counter((i, op.p) for i in ids)
        if op.kind == "overwrite":
            ids = [next(self.ids) for _ in range(op.n)]
            txn.remove_files(txn.read_files().column("path").to_pylist())
            txn.add_file(self._write_file(op.p, ids))
            return txn, lambda rows: Counter((i, op.p) for i in ids)
        if op.kind == "delete_partition":
            txn.remove_files(txn.read_files({"p": op.p}).column("path").to_pylist())
            return txn, lambda rows: Counter({r: c for r, c in rows.items() if r[1] != op.p})
        if op.kind == "delete_dv":
            gone = self._delete_with_dv(txn, op)
            return txn, lambda rows: Counter({r: c for r, c in rows.items() if r[0] not in gone})
        key, value = op.prop
        txn.set_properties({key: value})
        return txn, lambda rows: rows

    def _delete_with_dv(self, txn: Any, op: Op) -> set[int]:
        """Delete the first ``op.n`` remaining rows of the partition's first file with a deletion vector."""
        files = txn.read_files({"p": op.p}).to_pylist()
        if not files:
            return set()
        f = sorted(files, key=lambda r: r["path"])[0]
        ids = pq.read_table(os.path.join(self.path, f["path"])).column("id").to_pylist()
        old = f.get("deletion_vector")
        deleted = set(self._dv_rows(f)) if old else set()
        more = [i for i in range(len(ids)) if i not in deleted][:op.n]
        if not more:
            return set()
        rows = sorted(deleted | set(more))
        bitmap = bitmap_array(rows)
        dv = {"storageType": "i", "pathOrInlineDv": z85_encode(bitmap), "sizeInBytes": len(bitmap),
              "cardinality": len(rows)}
        old_dv = {k: v for k, v in old.items() if v is not None} if old else None
        txn.remove_file(AddFile(f["path"], f["size"], dict(f["partition_values"]), 1, True, None,
                                deletion_vector=old_dv))
        txn.add_file(AddFile(f["path"], f["size"], dict(f["partition_values"]), 1, True,
                             f'{{"numRecords":{len(ids)}}}', deletion_vector=dv))
        return {ids[i] for i in more}

    def _dv_rows(self, f: dict) -> list[int]:
        from airflow_provider_delta.log import read_deletion_vector
        dv = {k: v for k, v in f["deletion_vector"].items() if v is not None}
        return [int(i) for i in read_deletion_vector(self.table.storage, dv)]

    # ----------------------------------------------------------- one step
    def step(self, ours: Op, theirs: Op | None) -> str:
        """Run one step; return what happened ("ok", "conflict: <error>", "refused: <error>")."""
        try:
            txn, effect = self.prepare(self.table, ours)
        except InvalidArgumentError as e:         # e.g. nothing to remove is still a valid empty op
            return f"refused: {e}"
        before = Counter(self.rows)
        winner_effect = None
        if theirs is not None and theirs.kind == "append" and self.foreign_append is not None:
            ids = [next(self.ids) for _ in range(theirs.n)]
            self.foreign_append(theirs.p, ids)
            winner_effect = lambda rows: rows + Counter((i, theirs.p) for i in ids)  # noqa: E731
            self.rows = winner_effect(self.rows)
        elif theirs is not None:
            try:
                wtxn, winner_effect = self.prepare(self.other, theirs)
                wtxn.commit()
            except (InvalidArgumentError, UnsupportedFeatureError):
                winner_effect = None               # the table refused the winner (append-only, DVs turned off...)
            if winner_effect is not None:
                self.rows = winner_effect(self.rows)
        try:
            txn.commit()
        except ConcurrentModificationError as e:
            return f"conflict: {type(e).__name__}"
        except (InvalidArgumentError, UnsupportedFeatureError) as e:   # e.g. a new DV after DVs were turned off
            return f"refused: {e}"
        serial = [effect(self.rows)]
        if winner_effect is not None:
            serial.append(winner_effect(effect(before)))
        actual = self.read_ours()
        assert actual in serial, f"rows {sorted(actual.elements())} are no serial order of {ours} and {theirs}"
        self.rows = actual
        return "ok"

    # ----------------------------------------------------------- readers
    def read_ours(self) -> Rows:
        t = DeltaTable(self.path).snapshot().to_pyarrow(columns=["id", "p"])
        return Counter(zip(t.column("id").to_pylist(), t.column("p").to_pylist()))

    def read_deltalake(self) -> Rows:
        dt = deltalake.DeltaTable(self.path)
        t = pa.table(deltalake.QueryBuilder().register("t", dt).execute("select id, p from t").read_all())
        return Counter(zip(t.column("id").to_pylist(), t.column("p").to_pylist()))

    def check(self) -> None:
        ours = self.read_ours()
        assert ours == self.rows, f"our reader: {sorted(ours.elements())} != model {sorted(self.rows.elements())}"
        theirs = self.read_deltalake()
        assert theirs == ours, f"deltalake: {sorted(theirs.elements())} != ours {sorted(ours.elements())}"


def examples(env: str, default: int) -> int:
    """The number of examples: ``env`` (a stress run sets it high), else a small default for CI."""
    return int(os.environ.get(env, default))
