"""Deletion vectors: decoding (every container kind, every storage type), applying them to
rows, and refusing corrupt ones with a typed error that names the DV file.

The bitmaps here are written by a small encoder of this test that follows the Roaring
format spec independently of the decoder; the corpus tables (Delta Spark, delta-rs and
kernel writers) and the interop suite check the decoder against other writers' bytes.
"""
from __future__ import annotations

import json
import struct
import uuid
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import CorruptLogError, DeltaTable, VersionNotFoundError
from airflow_provider_delta.log.read.deletion_vectors import (
    decode_bitmap_array, dv_file_path, read_deletion_vector, z85_decode,
)
from airflow_provider_delta.log.base.errors import DeletionVectorError
from airflow_provider_delta.log.base.storage import Storage
from corpus_expected import dir_state, sorted_rows

from dv_encoding import bitmap_array, z85_encode


def dv_file(bitmaps: list[bytes]) -> tuple[bytes, list[int]]:
    """A DV file holding ``bitmaps``, and the offset of each."""
    data, offsets = bytearray(b"\x01"), []
    for b in bitmaps:
        offsets.append(len(data))
        data += struct.pack(">i", len(b)) + b + struct.pack(">I", zlib.crc32(b))
    return bytes(data), offsets


def u_descriptor(uid: uuid.UUID, prefix: str, offset: int, bitmap: bytes, cardinality: int) -> dict:
    return {"storageType": "u", "pathOrInlineDv": prefix + z85_encode(uid.bytes), "offset": offset,
            "sizeInBytes": len(bitmap), "cardinality": cardinality}


# ----------------------------------------------------------------------------- decoding


def test_z85_decodes_the_spec_example():
    assert z85_decode("HelloWorld") == bytes([0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B])
    with pytest.raises(ValueError):
        z85_decode("Hell~")
    with pytest.raises(ValueError):
        z85_decode("HelloWorl")


def test_z85_short_last_group_of_the_rust_crate():
    """delta-kernel-rs (cdf-table-with-dv, v5) writes 2 tail bytes 03 00 as '##' + '093'."""
    assert z85_decode("HelloWorld##093") == bytes([0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B, 3, 0])
    with pytest.raises(ValueError):
        z85_decode("#####")
    with pytest.raises(ValueError):
        z85_decode("%%%%%")  # 84 * 85**4 > 2**32: not a group any encoder writes


@pytest.mark.parametrize("values,runs", [
    ([0, 3, 7], False),                                           # one array container
    (list(range(0, 200_000, 3)), False),                          # bitset containers (> 4096 per key)
    (list(range(10, 50)) + list(range(70_000, 70_010)), True),    # run containers, no offset header
    ([k * 65536 + j for k in range(6) for j in range(5, 9)], True),  # runs with the offset header (>= 4)
    ([1, 2**32 + 5, 2**33 + 2**16 + 1], False),                  # three 64-bit buckets
], ids=["array", "bitset", "runs-short", "runs-offsets", "buckets"])
def test_bitmap_array_containers(values, runs):
    got = decode_bitmap_array(bitmap_array(values, runs))
    assert got.dtype == np.uint64
    assert got.tolist() == sorted(set(values))


def test_dv_file_path_of_u_and_p():
    uid = uuid.UUID("ae7177f2-6d17-4ea8-819b-8d62fa2c5469")
    enc = z85_encode(uid.bytes)
    assert dv_file_path({"storageType": "u", "pathOrInlineDv": enc}) == f"deletion_vector_{uid}.bin"
    assert dv_file_path({"storageType": "u", "pathOrInlineDv": "ab" + enc}) == f"ab/deletion_vector_{uid}.bin"
    assert dv_file_path({"storageType": "p", "pathOrInlineDv": "s3://b/x.bin"}) == "s3://b/x.bin"
    assert dv_file_path({"storageType": "i", "pathOrInlineDv": enc}) is None


def test_inline_u_and_p_descriptors_and_one_read_per_file(tmp_path):
    storage = Storage(str(tmp_path))
    b1, b2 = bitmap_array([1, 4]), bitmap_array(list(range(100)), runs=True)
    data, (o1, o2) = dv_file([b1, b2])
    uid = uuid.uuid4()
    (tmp_path / "xy").mkdir()
    (tmp_path / "xy" / f"deletion_vector_{uid}.bin").write_bytes(data)
    cache: dict[str, bytes] = {}
    assert read_deletion_vector(storage, u_descriptor(uid, "xy", o1, b1, 2), cache).tolist() == [1, 4]
    assert list(cache) == [f"xy/deletion_vector_{uid}.bin"]
    (tmp_path / "xy" / f"deletion_vector_{uid}.bin").unlink()  # the second DV comes from the cache
    assert read_deletion_vector(storage, u_descriptor(uid, "xy", o2, b2, 100), cache).tolist() == list(range(100))
    inline = bitmap_array([0, 9, 10])  # 30 bytes: Z85 pads the last group, sizeInBytes trims it
    dv_i = {"storageType": "i", "pathOrInlineDv": z85_encode(inline), "offset": None,
            "sizeInBytes": len(inline), "cardinality": 3}
    assert read_deletion_vector(storage, dv_i).tolist() == [0, 9, 10]
    absolute = tmp_path / "elsewhere.bin"
    absolute.write_bytes(data)
    dv_p = {"storageType": "p", "pathOrInlineDv": f"file://{absolute}", "offset": o1, "sizeInBytes": len(b1),
            "cardinality": 2}
    assert read_deletion_vector(storage, dv_p).tolist() == [1, 4]


# ----------------------------------------------------------------------------- a table with DVs

_SCHEMA = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}},
                                        {"name": "part", "type": "string", "nullable": True, "metadata": {}}]}


def _dv_table(root: Path, deleted: dict[str, list[int]], storage: str = "u") -> tuple[dict, dict]:
    """A hand-written table of two partitions of 10 rows each (ids 0..19), with DVs on the
    files named in ``deleted``; all file DVs share one DV file (as Delta Spark writes them)."""
    root.mkdir(parents=True, exist_ok=True)
    adds, bitmaps = [], {}
    for i, part in enumerate(["a", "b"]):
        name = f"part={part}/f{i}.parquet"
        (root / f"part={part}").mkdir(exist_ok=True)
        pq.write_table(pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64())}), root / name)
        adds.append({"path": name, "partitionValues": {"part": part}, "size": (root / name).stat().st_size,
                     "modificationTime": 0, "dataChange": True})
        if part in deleted:
            bitmaps[part] = bitmap_array(deleted[part])
    uid = uuid.UUID(int=42)
    data, offsets = dv_file(list(bitmaps.values()))
    if bitmaps and storage == "u":
        (root / f"deletion_vector_{uid}.bin").write_bytes(data)
    for add in adds:
        part = add["partitionValues"]["part"]
        if part not in bitmaps:
            continue
        b = bitmaps[part]
        if storage == "u":
            add["deletionVector"] = u_descriptor(uid, "", offsets[list(bitmaps).index(part)], b, len(deleted[part]))
        else:
            add["deletionVector"] = {"storageType": "i", "pathOrInlineDv": z85_encode(b), "sizeInBytes": len(b),
                                     "cardinality": len(deleted[part])}
    actions = [{"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                             "writerFeatures": ["deletionVectors"]}},
               {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}},
                             "schemaString": json.dumps(_SCHEMA), "partitionColumns": ["part"],
                             "configuration": {"delta.enableDeletionVectors": "true"}, "createdTime": 0}},
               *({"add": a} for a in adds)]
    (root / "_delta_log").mkdir(exist_ok=True)
    (root / "_delta_log" / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return {a["partitionValues"]["part"]: a for a in adds}, {"uuid": uid, "offsets": offsets}


@pytest.mark.parametrize("storage", ["u", "i"])
def test_rows_with_deletion_vectors(tmp_path, storage):
    _dv_table(tmp_path / "t", {"a": [0, 5, 9], "b": [3]}, storage)
    snap = DeltaTable(str(tmp_path / "t")).snapshot()
    ids = sorted(snap.to_pyarrow().column("id").to_pylist())
    assert ids == [i for i in range(20) if i not in (0, 5, 9, 13)]
    # filters and columns apply after the DVs
    assert sorted(snap.to_pyarrow(columns=["id"], filter=[("part", "=", "a")]).column("id").to_pylist()) == \
        [1, 2, 3, 4, 6, 7, 8]
    assert snap.to_pyarrow(filter=[("id", ">=", 13)]).num_rows == 6


def _corrupt(root: Path, how: str) -> None:
    dv_path = root / f"deletion_vector_{uuid.UUID(int=42)}.bin"
    log = root / "_delta_log" / f"{0:020d}.json"
    data = bytearray(dv_path.read_bytes())
    if how == "magic":
        data[5] ^= 0xFF        # first byte of the magic number of the first bitmap
        struct.pack_into(">I", data, len(data) - 4, zlib.crc32(bytes(data[5:-4])))
    elif how == "checksum":
        data[-1] ^= 0x01
    elif how == "size":
        struct.pack_into(">i", data, 1, struct.unpack_from(">i", data, 1)[0] + 1)
    elif how == "version":
        data[0] = 2
    elif how == "missing":
        dv_path.unlink()
        return
    elif how == "cardinality":
        log.write_text(log.read_text().replace('"cardinality": 3', '"cardinality": 4'))
        return
    elif how == "past-the-end":
        log.write_text(log.read_text().replace('"offset": 1', '"offset": 100'))
        return
    dv_path.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["magic", "checksum", "size", "version", "missing", "cardinality", "past-the-end"])
def test_corrupt_deletion_vector_is_a_typed_error_naming_the_file(tmp_path, how):
    root = tmp_path / "t"
    _dv_table(root, {"a": [0, 5, 9]})
    _corrupt(root, how)
    before = dir_state(root)
    with pytest.raises(DeletionVectorError) as ei:
        DeltaTable(str(root)).snapshot().to_pyarrow()
    assert isinstance(ei.value, CorruptLogError)
    name = f"deletion_vector_{uuid.UUID(int=42)}.bin"
    assert name in str(ei.value) and ei.value.path == name
    assert dir_state(root) == before  # reading changed nothing


def test_dv_deleting_a_row_past_the_end_of_the_file(tmp_path):
    root = tmp_path / "t"
    _dv_table(root, {"a": [2, 10]}, "i")
    with pytest.raises(DeletionVectorError, match="row 10 of a file with 10 rows"):
        DeltaTable(str(root)).snapshot().to_pyarrow()


def test_corrupt_inline_dv(tmp_path):
    root = tmp_path / "t"
    _dv_table(root, {"a": [2]}, "i")
    log = root / "_delta_log" / f"{0:020d}.json"
    text = log.read_text()
    dv = json.loads(text.splitlines()[2])["add"]["deletionVector"]
    log.write_text(text.replace(dv["pathOrInlineDv"], "~" + dv["pathOrInlineDv"][1:]))
    with pytest.raises(DeletionVectorError, match="inline"):
        DeltaTable(str(root)).snapshot().to_pyarrow()


# ----------------------------------------------------------------------------- other writers' DVs

#: Corpus tables whose live files carry DVs (JSON commits or checkpoints), with the rows
#: upstream tests expect where the README quotes them; deltalake's kernel-based SQL
#: reader is the reference for the others.
DV_TABLES = {
    "dat/deletion_vectors/delta": None,    # compared with DAT's expected rows in test_corpus_dat
    "delta-kernel-rs/with-short-dv": None,
    "delta-golden/log-replay-dv-key-cases": None,
    "delta-golden/dv-partitioned-with-checkpoint": None,
    "delta-rs/table-with-dv-small": None,
    "delta-kernel-rs/table-with-dv-small": None,
    "delta-rs/table_with_deletion_logs": None,
    "delta-rs/cdf-table-with-cdc-and-dvs": {0: "new", 1: "after-large-delete", 2: "", 10: "merge1-insert",
                                            12: "merge2-insert"},
    "delta-kernel-rs/cdf-table-with-dv": None,
    "delta-kernel-rs/compacted-log-files-table": None,
}


def _deltalake_rows(path: Path, version: int | None = None) -> pa.Table:
    deltalake = pytest.importorskip("deltalake")
    reader = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(path), version=version))
    return pa.table(reader.execute("select * from t").read_all())


@pytest.mark.parametrize("rel", sorted(DV_TABLES))
def test_corpus_tables_with_deletion_vectors(rel, corpus):
    """Every version of each table: rows = physical rows - DV cardinalities, and the same rows
    as deltalake's kernel-based reader at that version."""
    table = DeltaTable(str(corpus / rel))
    latest = table.latest_version()
    with_dvs = 0
    for version in range(latest + 1):
        try:
            snap = table.snapshot(version=version)
        except VersionNotFoundError:
            continue  # commits before a checkpoint were removed
        files = snap.files()
        dvs = [d for d in files.column("deletion_vector").to_pylist() if d]
        with_dvs += bool(dvs)
        ours = snap.to_pyarrow()
        physical = sum(pq.read_metadata(corpus / rel / p).num_rows for p in files.column("path").to_pylist())
        assert ours.num_rows == physical - sum(d["cardinality"] for d in dvs), version
        assert sorted_rows(ours) == sorted_rows(_deltalake_rows(corpus / rel, version).select(ours.column_names)), \
            version
    assert with_dvs, "the table is listed for its deletion vectors"
    if DV_TABLES[rel]:
        got = {r["id"]: r["comment"] for r in table.snapshot().to_pyarrow().to_pylist()}
        assert {k: v or "" for k, v in got.items()} == DV_TABLES[rel]


def test_dvs_carried_by_a_checkpoint(corpus):
    """dv-partitioned-with-checkpoint: the latest snapshot starts from a checkpoint whose add
    rows carry the DVs; reading through it equals replaying the JSON commits alone."""
    table = DeltaTable(str(corpus / "delta-golden/dv-partitioned-with-checkpoint"))
    snap = table.snapshot()
    assert snap.segment.checkpoint_version is not None
    cp_version = snap.segment.checkpoint_version
    before = table.snapshot(version=cp_version - 1)
    assert before.segment.checkpoint_version is None or before.segment.checkpoint_version < cp_version
    at_cp = table.snapshot(version=cp_version)
    assert at_cp.segment.commits == [] or all(c.version > cp_version for c in at_cp.segment.commits)
    assert at_cp.files().column("deletion_vector").null_count < at_cp.files().num_rows
    assert sorted_rows(snap.to_pyarrow()) == sorted_rows(_deltalake_rows(corpus / "delta-golden/dv-partitioned-with-checkpoint")
                                                         .select(snap.to_pyarrow().column_names))
