"""Breaker findings (session 9) on F4b - a path is live once - and the RESTORE exemption.

Each test is a strict xfail while its finding is open; whoever fixes it removes the marker.
"""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dv_encoding import bitmap_array, z85_encode

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.commit_actions import AddFile
from airflow_provider_delta.log.base.errors import DeltaError

SCHEMA = pa.schema([("id", pa.int64())])


def _inline(rows: list[int]) -> dict:
    bitmap = bitmap_array(rows)
    return {"storageType": "i", "pathOrInlineDv": z85_encode(bitmap), "sizeInBytes": len(bitmap),
            "cardinality": len(rows)}


def _ids(uri: str) -> list[int]:
    return sorted(DeltaTable(uri).snapshot().to_pyarrow().column("id").to_pylist())


def _table(tmp_path, dvs: bool) -> tuple[DeltaTable, dict]:
    """One live file of rows 1, 2, 3; with ``dvs`` the DV feature is on (no DV yet)."""
    props = {"delta.enableDeletionVectors": "true"} if dvs else None
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties=props)
    table.write(pa.table({"id": [1, 2, 3]}, schema=SCHEMA))
    return table, table.snapshot().files().to_pylist()[0]


def _delete_first_row(uri: str, row: dict) -> None:
    """Delta Spark's DELETE form: remove the live file, add it again with a DV hiding row 0."""
    stats = json.dumps({**json.loads(row["stats"]), "tightBounds": False})
    with DeltaTable(uri).transaction(operation="DELETE") as txn:
        txn.remove_file(row["path"])
        txn.add_file(AddFile(row["path"], row["size"], {}, row["modification_time"], True, stats,
                             deletion_vector=_inline([0])))


def test_a_readd_without_dv_rebased_over_a_concurrent_dv_is_refused(tmp_path):
    """A transaction reads the table (no DV anywhere) and re-adds its live file as it is - by itself
    the same logical file, allowed. Meanwhile a DELETE gives the file a DV (remove + add with DV).
    Serially the re-add would be refused (F4b: the live logical file is now (p, DV) and the commit
    does not remove it); rebased, it must be refused too, or conflict. Nothing may be written.
    Before the fix it landed: row 1 back, rows 2 and 3 twice (conflicts.check_removes_of_added_files)."""
    table, row = _table(tmp_path, dvs=True)
    txn = DeltaTable(table.uri).transaction()
    assert txn.snapshot is not None            # the read snapshot: no DV
    _delete_first_row(table.uri, row)
    version = table.latest_version()
    txn.add_file(AddFile(row["path"], row["size"], {}, row["modification_time"], True, row["stats"]))
    with pytest.raises(DeltaError):
        txn.commit()
    assert DeltaTable(table.uri).latest_version() == version
    assert _ids(table.uri) == [2, 3]


@pytest.mark.parametrize("dvs", [False, True], ids=["no-dv-feature", "with-dv"])
@pytest.mark.parametrize("spelling", ["dot", "absolute",
                                      "file-uri"])
def test_a_live_file_added_under_another_spelling_is_refused(tmp_path, dvs, spelling):
    """``./p``, ``/table/p`` and ``file:///table/p`` open the same data file as the live ``p``.
    Hadoop's ``new Path(new URI(...))`` (Delta Spark's canonicalization) even drops the ``./``, so
    Delta Spark reads ``./p`` and ``p`` as one file where our replay reads two. An add of the live
    file under another spelling, without the remove of the live entry, must be refused
    (InvalidArgumentError or another typed error) and write nothing. ``./p`` is refused since the
    fix (no '.' segments in added paths); the absolute spellings since session 10 (placed by
    data_paths.table_relative, write/commit_plan._live_files_spelled_otherwise). Delta Spark reads such
    a log's rows twice too (it keys ``p`` and ``file:/t/p`` apart), so our writer must not write it."""
    table, row = _table(tmp_path, dvs)
    if dvs:
        _delete_first_row(table.uri, row)
    expected = _ids(table.uri)
    version = table.latest_version()
    absolute = str(tmp_path / "t" / row["path"])
    path = {"dot": "./" + row["path"], "absolute": absolute, "file-uri": "file://" + absolute}[spelling]
    with pytest.raises(DeltaError):
        with DeltaTable(table.uri).transaction() as txn:
            txn.add_file(AddFile(path, row["size"], {}, row["modification_time"], True, row["stats"]))
    assert DeltaTable(table.uri).latest_version() == version
    assert _ids(table.uri) == expected


def test_one_new_file_added_twice_under_two_spellings_in_one_commit_is_refused(tmp_path):
    """Delta Spark's checkNoDuplicateActions on canonical paths: ``new.parquet`` and ``./new.parquet``
    are one path for it (and one file on disk). Refused, nothing written (before the fix both landed,
    the new file's rows read twice; now a '.' segment in an added path is refused)."""
    table, _ = _table(tmp_path, dvs=False)
    pq.write_table(pa.table({"id": [7, 8]}, schema=SCHEMA), str(tmp_path / "t" / "new.parquet"))
    size = os.path.getsize(tmp_path / "t" / "new.parquet")
    version = table.latest_version()
    with pytest.raises(DeltaError):
        with DeltaTable(table.uri).transaction() as txn:
            for path in ("new.parquet", "./new.parquet"):
                txn.add_file(AddFile(path, size, {}, 1, True, json.dumps({"numRecords": 2})))
    assert DeltaTable(table.uri).latest_version() == version
    assert _ids(table.uri) == [1, 2, 3]


def test_a_dot_segment_spelling_of_a_live_file_is_one_file_as_for_delta_spark(tmp_path):
    """Another writer's log: version 1 adds ``./p`` beside the live ``p`` (same data file). Delta
    Spark (checked on the jars in .jars: our writer's version of this log reads 1, 2, 3 in Delta
    Spark and 1, 1, 2, 2, 3, 3 in ours) reconciles the two into one logical file; so must we. Replay
    keys by Delta Spark's canonical path now (base/path_spelling.canonical_log_path)."""
    table, row = _table(tmp_path, dvs=False)
    add = {"add": {"path": "./" + row["path"], "partitionValues": {}, "size": row["size"],
                   "modificationTime": row["modification_time"], "dataChange": True, "stats": row["stats"]}}
    info = {"commitInfo": {"timestamp": 1, "operation": "WRITE"}}
    version = table.latest_version() + 1
    with open(tmp_path / "t" / "_delta_log" / f"{version:020d}.json", "w") as f:
        f.write(json.dumps(info) + "\n" + json.dumps(add) + "\n")
    assert _ids(table.uri) == [1, 2, 3]


def test_a_readd_rebased_over_a_concurrent_optimize_that_compacted_it_is_refused(tmp_path):
    """The same across OPTIMIZE: the winner compacts the live file away (its rows now in a new
    file); the re-add checked against the read snapshot would bring the file back beside the
    compacted one, every row of it read twice. A conflict, nothing written."""
    table, row = _table(tmp_path, dvs=False)
    table.write(pa.table({"id": [4]}, schema=SCHEMA))
    txn = DeltaTable(table.uri).transaction()
    assert txn.snapshot is not None
    assert DeltaTable(table.uri).optimize()["numFilesRemoved"] == 2
    version = table.latest_version()
    txn.add_file(AddFile(row["path"], row["size"], {}, row["modification_time"], True, row["stats"]))
    with pytest.raises(DeltaError):
        txn.commit()
    assert DeltaTable(table.uri).latest_version() == version
    assert _ids(table.uri) == [1, 2, 3, 4]


def test_a_dv_whose_key_another_writer_escaped_still_sends_adds_to_the_check(tmp_path):
    """Version 2 (another writer) gives the live file a DV, spelling the key with a JSON escape
    (``"deletion\\u0056ector"`` - the same key to every JSON parser). A re-add of the file without
    DV and without the remove must be refused as for the plain spelling; nothing written. Before
    the fix, may_hold_deletion_vectors looked for the literal key only: judged DV-free, the add was
    not looked up and the deleted row came back."""
    table, row = _table(tmp_path, dvs=True)
    stats = json.dumps({**json.loads(row["stats"]), "tightBounds": False})
    rm = {"remove": {"path": row["path"], "deletionTimestamp": 1, "dataChange": True}}
    add = {"add": {"path": row["path"], "partitionValues": {}, "size": row["size"],
                   "modificationTime": row["modification_time"], "dataChange": True, "stats": stats,
                   "deletionVector": _inline([0])}}
    text = json.dumps(add).replace('"deletionVector"', '"deletion\\u0056ector"')
    version = table.latest_version() + 1
    with open(tmp_path / "t" / "_delta_log" / f"{version:020d}.json", "w") as f:
        f.write(json.dumps({"commitInfo": {"timestamp": 1, "operation": "DELETE"}}) + "\n" + json.dumps(rm)
                + "\n" + text + "\n")
    assert _ids(table.uri) == [2, 3]
    with pytest.raises(DeltaError):
        with DeltaTable(table.uri).transaction() as txn:
            txn.add_file(AddFile(row["path"], row["size"], {}, row["modification_time"], True, row["stats"]))
    assert DeltaTable(table.uri).latest_version() == version
    assert _ids(table.uri) == [2, 3]


def test_a_protocol_whose_key_another_writer_escaped_is_not_ignored(tmp_path):
    """Version 1 (another writer) upgrades the protocol to a reader/writer feature nobody knows,
    its key spelled ``"pr\\u006ftocol"`` (the same key to every JSON parser: Delta Spark's Jackson
    reads the protocol). Reading must fail with a typed error, and so must a write - writing nothing."""
    table, _ = _table(tmp_path, dvs=False)
    protocol = {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["madeUpFeature"],
                             "writerFeatures": ["madeUpFeature"]}}
    version = table.latest_version() + 1
    with open(tmp_path / "t" / "_delta_log" / f"{version:020d}.json", "w") as f:
        f.write(json.dumps({"commitInfo": {"timestamp": 1, "operation": "SET TBLPROPERTIES"}}) + "\n"
                + json.dumps(protocol).replace('"protocol"', '"pr\\u006ftocol"') + "\n")
    with pytest.raises(DeltaError):
        DeltaTable(table.uri).snapshot()
    with pytest.raises(DeltaError):
        DeltaTable(table.uri).write(pa.table({"id": [9]}, schema=SCHEMA))
    assert DeltaTable(table.uri).latest_version() == version
