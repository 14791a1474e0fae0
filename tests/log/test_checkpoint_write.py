"""Checkpoints we write: read back by deltalake (delta-rs) and by our reader, on real tables.

The strongest check is that another implementation, given only our checkpoint (the
commit files before it deleted), reconstructs the same version, rows and files it
saw from the original log.
"""
from __future__ import annotations

import datetime as dt
import decimal
import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable as RsTable
from deltalake import write_deltalake
from deltalake.exceptions import DeltaProtocolError

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base import action_schemas
from airflow_provider_delta.log.maintenance import checkpoint as cpmod
from airflow_provider_delta.log.maintenance import checkpoint_rows as cprows
from airflow_provider_delta.log.base.errors import (
    InvalidArgumentError, InvalidTableStateError, UnsupportedFeatureError, VersionNotFoundError,
)

LOG = "_delta_log"


# ------------------------------------------------------------------ helpers
def _data(i: int) -> pa.Table:
    n = 3
    return pa.table({
        "id": pa.array([i * 10 + k for k in range(n)], pa.int64()),
        "part": pa.array(["a", "b c", "x%y"][: n], pa.string()),
        "n": pa.array([i, i + 1, None], pa.int32()),
        "ts": pa.array([1_700_000_000_000_000 + i * 1000 + k for k in range(n)], pa.timestamp("us", tz="UTC")),
        "day": pa.array([19000 + i + k for k in range(n)], pa.date32()),
        "amount": pa.array([decimal.Decimal(f"{i}.{k}5") for k in range(n)], pa.decimal128(10, 2)),
        "nested": pa.array([{"x": i + k, "y": f"s{k}"} for k in range(n)],
                           pa.struct([("x", pa.int64()), ("y", pa.string())])),
    })


def make_table(path: Path, commits: int = 5, configuration: dict | None = None) -> Path:
    """A partitioned table with appends and an overwrite (so it has tombstones)."""
    for i in range(commits):
        mode = "overwrite" if i == commits - 2 else ("append" if i else "error")
        write_deltalake(str(path), _data(i), partition_by=["part"], mode=mode,
                        configuration=configuration if i == 0 else None)
    return path




def log_files(path: Path) -> list[str]:
    return sorted(os.listdir(path / LOG))


def delete_commits_before(path: Path, version: int) -> None:
    for name in os.listdir(path / LOG):
        if name[:20].isdigit() and int(name[:20]) < version:
            os.remove(path / LOG / name)


def rows(t: pa.Table) -> list:
    return sorted((json.dumps(r, sort_keys=True, default=str) for r in t.to_pylist()))


def rs_state(path: Path, version: int | None = None):
    """(version, rows, file URIs) as deltalake sees them; None for tables it cannot read (DVs)."""
    try:
        t = RsTable(str(path)) if version is None else RsTable(str(path), version=version)
        return t.version(), rows(t.to_pyarrow_table()), sorted(t.file_uris())
    except DeltaProtocolError:
        return None


def our_files(path: Path, with_stats: bool = True) -> tuple[int, list]:
    snap = DeltaTable(str(path)).snapshot()
    cols = ["path", "size", "partition_values", "deletion_vector"] + (["stats"] if with_stats else [])
    f = snap.files().select(cols)
    return snap.version, sorted(json.dumps(r, sort_keys=True, default=str) for r in f.to_pylist())


def our_rows(path: Path):
    """Rows through our reader, or None where it cannot read rows yet (column mapping, DVs)."""
    try:
        return rows(DeltaTable(str(path)).snapshot().to_pyarrow())
    except UnsupportedFeatureError:
        return None


def read_checkpoint_rows(path: Path, version: int) -> list[dict]:
    names = sorted(n for n in os.listdir(path / LOG) if n.startswith(f"{version:020d}.checkpoint"))
    out = []
    for n in names:
        out += pq.read_table(path / LOG / n).to_pylist()
    return out


# ------------------------------------------------------------- round trips
@pytest.mark.parametrize("parts", [None, 3])
@pytest.mark.parametrize("stats_as_struct", [False, True])
def test_deltalake_and_we_read_our_checkpoint_alone(tmp_path, parts, stats_as_struct):
    conf = {"delta.checkpoint.writeStatsAsStruct": "true"} if stats_as_struct else None
    path = make_table(tmp_path / "t", configuration=conf)
    before_rs = rs_state(path)
    before_ours = our_files(path)
    before_rows = rows(DeltaTable(str(path)).snapshot().to_pyarrow())

    v = DeltaTable(str(path)).checkpoint(parts=parts)
    assert v == before_rs[0] == 4
    n = 1 if parts is None else parts
    expected_names = ([f"{v:020d}.checkpoint.parquet"] if n == 1 else
                      [f"{v:020d}.checkpoint.{i:010d}.{n:010d}.parquet" for i in range(1, n + 1)])
    assert set(expected_names) <= set(log_files(path))
    assert not [f for f in log_files(path) if f.endswith(".tmp")]

    delete_commits_before(path, v)
    assert rs_state(path) == before_rs
    assert our_files(path) == before_ours
    assert rows(DeltaTable(str(path)).snapshot().to_pyarrow()) == before_rows == before_rs[1]


def test_checkpoint_holds_every_action_once(tmp_path):
    path = make_table(tmp_path / "t")
    snap = DeltaTable(str(path)).snapshot()
    n_files, n_tomb = snap.files().num_rows, snap.tombstones().num_rows
    assert n_tomb > 0
    v = DeltaTable(str(path)).checkpoint()
    got = read_checkpoint_rows(path, v)
    kinds = [next(k for k, x in r.items() if x is not None) for r in got]
    assert kinds.count("protocol") == 1 and kinds.count("metaData") == 1
    assert kinds.count("add") == n_files and kinds.count("remove") == n_tomb
    # remove rows are tombstones only: no stats/tags columns (PROTOCOL.md checkpoint schema)
    remove_type = pq.read_schema(path / LOG / f"{v:020d}.checkpoint.parquet").field("remove").type
    assert {f.name for f in remove_type}.isdisjoint({"stats", "tags"})
    # paths are stored URL-encoded, exactly as the JSON commits hold them
    logged = set()
    for name in log_files(path):
        if name.endswith(".json"):
            for line in (path / LOG / name).read_text().splitlines():
                a = json.loads(line)
                if "add" in a:
                    logged.add(a["add"]["path"])
    assert {r["add"]["path"] for r in got if r["add"]} <= logged


def test_last_checkpoint_contents(tmp_path):
    path = make_table(tmp_path / "t")
    v = DeltaTable(str(path)).checkpoint(parts=2)
    info = json.loads((path / LOG / "_last_checkpoint").read_text())
    parts = [path / LOG / f"{v:020d}.checkpoint.{i:010d}.0000000002.parquet" for i in (1, 2)]
    total_rows = sum(pq.ParquetFile(p).metadata.num_rows for p in parts)
    assert info == {"version": v, "size": total_rows, "parts": 2,
                    "sizeInBytes": sum(p.stat().st_size for p in parts),
                    "numOfAddFiles": DeltaTable(str(path)).snapshot().files().num_rows}


def test_last_checkpoint_never_moves_backwards(tmp_path):
    path = make_table(tmp_path / "t")
    table = DeltaTable(str(path))
    assert table.checkpoint() == 4
    assert table.checkpoint(version=2) == 2
    assert (path / LOG / f"{2:020d}.checkpoint.parquet").exists()
    assert json.loads((path / LOG / "_last_checkpoint").read_text())["version"] == 4
    # an older checkpoint is still a full, readable state of its version
    delete_commits_before(path, 2)
    assert RsTable(str(path), version=2).version() == 2
    assert DeltaTable(str(path)).snapshot(version=3).version == 3


def test_single_part_without_partitioned_tables_single_classic_name(tmp_path):
    path = tmp_path / "flat"
    write_deltalake(str(path), pa.table({"x": [1, 2, 3]}))
    write_deltalake(str(path), pa.table({"x": [4]}), mode="append")
    v = DeltaTable(str(path)).checkpoint()
    delete_commits_before(path, v)
    assert RsTable(str(path)).to_pyarrow_table().num_rows == 4


# ---------------------------------------------------------- multi-part rules
def test_spark_murmur3_matches_spark():
    # Reference values from Apache Spark 4.2 `SELECT hash(s), pmod(hash(s), 3)` (seed 42),
    # computed with the pyspark in this environment.
    vals = ["", "a", "ab", "abc", "abcd", "abcde", "part-00000-xyz.snappy.parquet",
            "d=2024-01-01/part-0001-é中文.parquet", "x%20y/üñí"]
    spark_hash = [142593372, 1485273170, -97053317, 1322437556, -396302900, 814637928, 363001923,
                  90608029, 128306514]
    spark_pmod3 = [0, 2, 1, 2, 1, 0, 0, 1, 0]
    got = cprows.spark_murmur3(pa.array(vals))
    assert got.tolist() == spark_hash
    assert np.mod(got.astype(np.int64), 3).tolist() == spark_pmod3
    # sliced arrays (non-zero offset) hash the same
    assert cprows.spark_murmur3(pa.array(vals).slice(3)).tolist() == spark_hash[3:]


def _scalar_spark_murmur3(s: str, seed: int = 42) -> int:
    """Plain restatement of Spark's Murmur3_x86_32.hashUnsafeBytes, one string at a time."""
    def mix_k1(k):
        k = (k * 0xCC9E2D51) & 0xFFFFFFFF
        k = ((k << 15) | (k >> 17)) & 0xFFFFFFFF
        return (k * 0x1B873593) & 0xFFFFFFFF

    def mix_h1(h, k):
        h ^= k
        h = ((h << 13) | (h >> 19)) & 0xFFFFFFFF
        return (h * 5 + 0xE6546B64) & 0xFFFFFFFF
    b = s.encode()
    h = seed
    aligned = len(b) // 4 * 4
    for i in range(0, aligned, 4):
        h = mix_h1(h, mix_k1(int.from_bytes(b[i:i + 4], "little")))
    for i in range(aligned, len(b)):
        h = mix_h1(h, mix_k1((b[i] - 256 if b[i] > 127 else b[i]) & 0xFFFFFFFF))
    h ^= len(b)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def test_vectorized_murmur3_matches_scalar_on_random_strings():
    import random
    rnd = random.Random(5)
    # more rows than one internal chunk, every tail length, multi-byte characters
    vals = ["".join(rnd.choice("aZ9/=%é中\U0001f600") for _ in range(rnd.randrange(0, 41))) for _ in range(70_000)]
    assert cprows.spark_murmur3(pa.array(vals)).tolist() == [_scalar_spark_murmur3(v) for v in vals]


@pytest.mark.parametrize("parts", [3, 40])   # 40: more parts than files, and the >32-part path
def test_multipart_is_spark_hash_partitioned(tmp_path, parts):
    path = make_table(tmp_path / "t", commits=6)
    before = rs_state(path)
    v = DeltaTable(str(path)).checkpoint(parts=parts)
    seen = 0
    for i in range(1, parts + 1):
        t = pq.read_table(path / LOG / f"{v:020d}.checkpoint.{i:010d}.{parts:010d}.parquet")
        for r in t.to_pylist():
            seen += 1
            key = (r["add"] or r["remove"] or {}).get("path")
            if key is None:  # non-file actions go where Spark's null key lands: pmod(42, parts)
                assert i == 42 % parts + 1
            else:
                h = int(cprows.spark_murmur3(pa.array([key]))[0])
                assert h % parts + 1 == i
    assert seen == json.loads((path / LOG / "_last_checkpoint").read_text())["size"]
    delete_commits_before(path, v)
    assert rs_state(path) == before


# ------------------------------------------------------------- stats columns
def test_stats_parsed_and_partition_values_parsed_are_typed(tmp_path):
    path = tmp_path / "typed"
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "p_int": pa.array([7, 8, 7], pa.int32()),
                     "p_day": pa.array([dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2024, 1, 1)]),
                     "ts": pa.array([1, 2, 3], pa.timestamp("us", tz="UTC")),
                     "day": pa.array([19000, 19001, 19002], pa.date32()),
                     "s": ["x", "y", None]})
    write_deltalake(str(path), data, partition_by=["p_int", "p_day"],
                    configuration={"delta.checkpoint.writeStatsAsStruct": "true"})
    v = DeltaTable(str(path)).checkpoint()
    schema = pq.read_schema(path / LOG / f"{v:020d}.checkpoint.parquet")
    add = schema.field("add").type
    assert add.field("partitionValues_parsed").type == pa.struct([("p_int", pa.int32()), ("p_day", pa.date32())])
    sp = add.field("stats_parsed").type
    assert sp.field("minValues").type == pa.struct([("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC")),
                                                    ("day", pa.date32()), ("s", pa.string())])
    adds = [r["add"] for r in read_checkpoint_rows(path, v) if r["add"]]
    assert len(adds) == 2  # one file per partition
    for a in adds:
        pv = dict(a["partitionValues"])
        assert a["partitionValues_parsed"] == {"p_int": int(pv["p_int"]),
                                               "p_day": dt.date.fromisoformat(pv["p_day"])}
        stats = json.loads(a["stats"])
        parsed = a["stats_parsed"]
        assert parsed["numRecords"] == stats["numRecords"]
        assert parsed["minValues"]["id"] == stats["minValues"]["id"]
        assert parsed["maxValues"]["day"] == dt.date.fromisoformat(stats["maxValues"]["day"])
        assert parsed["nullCount"]["s"] == stats["nullCount"]["s"]
    delete_commits_before(path, v)
    assert RsTable(str(path)).to_pyarrow_table().num_rows == 3


def test_write_stats_as_json_false_omits_stats(tmp_path):
    path = tmp_path / "nojson"
    write_deltalake(str(path), pa.table({"id": [1, 2], "v": ["a", "b"]}),
                    configuration={"delta.checkpoint.writeStatsAsJson": "false",
                                   "delta.checkpoint.writeStatsAsStruct": "true"})
    v = DeltaTable(str(path)).checkpoint()
    add = pq.read_schema(path / LOG / f"{v:020d}.checkpoint.parquet").field("add").type
    assert add.get_field_index("stats") < 0
    assert add.get_field_index("stats_parsed") >= 0
    # deltalake can still read the table from the checkpoint alone
    delete_commits_before(path, v)
    assert RsTable(str(path)).to_pyarrow_table().num_rows == 2


def test_parse_stats_tolerates_nan_strings_and_junk():
    st = pa.struct([("numRecords", pa.int64()), ("minValues", pa.struct([("f", pa.float64())])),
                    ("maxValues", pa.struct([("f", pa.float64())]))])
    texts = pa.array(['{"numRecords":2,"minValues":{"f":1.5},"maxValues":{"f":"NaN"}}', None,
                      '{"numRecords":1,\n"minValues":{"f":-2}}'])
    got = cprows.parse_stats(texts, st).to_pylist()
    assert got == [{"numRecords": 2, "minValues": {"f": 1.5}, "maxValues": {"f": None}}, None,
                   {"numRecords": 1, "minValues": {"f": -2.0}, "maxValues": None}]
    junk = cprows.parse_stats(pa.array(['{"numRecords":"many"}']), st)
    assert junk.to_pylist() == [None]


def test_column_mapping_uses_physical_names(copy_table):
    path = copy_table("delta-golden/table-with-columnmapping-mode-name")
    table = DeltaTable(str(path))
    before = rs_state(path)
    # turn on struct stats with a real metadata commit
    with table.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.checkpoint.writeStatsAsStruct": "true"})
    md = table.snapshot().metadata
    v = table.checkpoint()
    add = pq.read_schema(Path(path) / LOG / f"{v:020d}.checkpoint.parquet").field("add").type
    physical = {f.name for f in add.field("stats_parsed").type.field("nullCount").type}
    schema = json.loads(md.schema_string)
    expected = {f["metadata"]["delta.columnMapping.physicalName"] for f in schema["fields"]
                if f["name"] not in md.partition_columns}
    assert physical and physical <= expected
    files_before = our_files(Path(path))
    delete_commits_before(Path(path), v)
    after = rs_state(path)
    assert after[1:] == before[1:] and after[0] == v
    assert our_files(Path(path)) == files_before


# ------------------------------------------ txn, domain metadata, DVs, expiry
def _commit(path: Path, version: int, actions: list[dict]) -> None:
    (path / LOG / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def test_txn_domain_metadata_and_deletion_vectors_survive(copy_table):
    path = copy_table("dat/deletion_vectors/delta")
    table = DeltaTable(str(path))
    latest = table.latest_version()
    _commit(path, latest + 1, [
        {"commitInfo": {"timestamp": 1, "operation": "WRITE"}},
        {"txn": {"appId": "app-1", "version": 7, "lastUpdated": 123}},
        {"txn": {"appId": "app-2", "version": 3}},
    ])
    before = DeltaTable(str(path)).snapshot()
    files_before = our_files(path)
    rs_before = rs_state(path)
    txns = before.transactions()
    assert before.files().column("deletion_vector").null_count < before.files().num_rows
    v = DeltaTable(str(path)).checkpoint()
    delete_commits_before(path, v)
    after = DeltaTable(str(path)).snapshot()
    assert after.segment.checkpoint_version == v and not after.segment.commits[:-1]
    assert after.transactions() == txns == {"app-1": (7, 123), "app-2": (3, None)}
    assert our_files(path) == files_before
    assert rs_state(path) == rs_before  # None: deltalake 1.6 cannot read deletion vectors


def test_domain_metadata_in_checkpoint(tmp_path):
    path = tmp_path / "dm"
    write_deltalake(str(path), pa.table({"x": [1]}))
    _commit(path, 1, [
        {"commitInfo": {"timestamp": 1, "operation": "UPGRADE PROTOCOL"}},
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["domainMetadata"]}},
    ])
    _commit(path, 2, [
        {"commitInfo": {"timestamp": 2, "operation": "WRITE"}},
        {"domainMetadata": {"domain": "delta.clustering", "configuration": "{\"c\":1}", "removed": False}},
        {"domainMetadata": {"domain": "gone", "configuration": "{}", "removed": False}},
    ])
    _commit(path, 3, [
        {"commitInfo": {"timestamp": 3, "operation": "WRITE"}},
        {"domainMetadata": {"domain": "gone", "configuration": "{}", "removed": True}},
    ])
    v = DeltaTable(str(path)).checkpoint()
    dms = [r["domainMetadata"] for r in read_checkpoint_rows(path, v) if r["domainMetadata"]]
    assert dms == [{"domain": "delta.clustering", "configuration": "{\"c\":1}", "removed": False}]
    protocol = next(r["protocol"] for r in read_checkpoint_rows(path, v) if r["protocol"])
    assert protocol["writerFeatures"] == ["domainMetadata"] and protocol["readerFeatures"] is None
    delete_commits_before(path, v)
    assert DeltaTable(str(path)).snapshot().domain_metadata() == {"delta.clustering": "{\"c\":1}"}


def test_expired_tombstones_are_left_out(tmp_path):
    path = make_table(tmp_path / "t")
    table = DeltaTable(str(path))
    n_tomb = table.snapshot().tombstones().num_rows
    assert n_tomb > 0
    far_future = table.snapshot().timestamp + 8 * 86_400_000
    v = cpmod.write_checkpoint(table, now_ms=far_future)
    got = read_checkpoint_rows(path, v)
    assert not [r for r in got if r["remove"]]
    os.remove(path / LOG / f"{v:020d}.checkpoint.parquet")  # an existing checkpoint is kept, not replaced
    v2 = cpmod.write_checkpoint(table, now_ms=table.snapshot().timestamp)
    assert len([r for r in read_checkpoint_rows(path, v2) if r["remove"]]) == n_tomb


# ---------------------------------------------------------------- atomicity
def test_crash_while_writing_publishes_nothing(tmp_path, monkeypatch):
    path = make_table(tmp_path / "t")
    before = log_files(path)
    real = cprows.add_column

    def boom(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(cprows, "add_column", boom)
    with pytest.raises(OSError):
        DeltaTable(str(path)).checkpoint(parts=2)
    assert log_files(path) == before  # no parts, no temp files, no _last_checkpoint
    monkeypatch.setattr(cprows, "add_column", real)


def test_crash_between_parts_leaves_an_ignored_incomplete_checkpoint(tmp_path, monkeypatch):
    path = make_table(tmp_path / "t")
    DeltaTable(str(path)).checkpoint(version=2)
    before_rs, before_ours = rs_state(path), our_files(path)
    real_publish = cpmod._publish
    calls = []

    def publish_one_then_crash(table, part):
        if calls:
            raise OSError("killed")
        calls.append(part.rel)
        real_publish(table, part)
    monkeypatch.setattr(cpmod, "_publish", publish_one_then_crash)
    with pytest.raises(OSError):
        DeltaTable(str(path)).checkpoint(parts=3)
    names = log_files(path)
    assert f"{4:020d}.checkpoint.0000000001.0000000003.parquet" in names
    assert f"{4:020d}.checkpoint.0000000002.0000000003.parquet" not in names
    assert not [n for n in names if n.endswith(".tmp")]
    assert json.loads((path / LOG / "_last_checkpoint").read_text())["version"] == 2
    # a leftover temp file of a hard crash is invisible too
    (path / LOG / f".{4:020d}.checkpoint.0000000002.0000000003.parquet.dead.tmp").write_bytes(b"partial")
    assert rs_state(path) == before_rs
    assert our_files(path) == before_ours
    # a retry completes the checkpoint, keeping the part that was already published
    monkeypatch.setattr(cpmod, "_publish", real_publish)
    assert DeltaTable(str(path)).checkpoint(parts=3) == 4
    delete_commits_before(path, 4)
    assert rs_state(path) == before_rs
    assert our_files(path) == before_ours


def test_existing_checkpoint_is_kept_not_replaced(tmp_path):
    path = make_table(tmp_path / "t")
    DeltaTable(str(path)).checkpoint()
    cp = path / LOG / f"{4:020d}.checkpoint.parquet"
    inode = cp.stat().st_ino
    DeltaTable(str(path)).checkpoint()
    assert cp.stat().st_ino == inode
    assert not [n for n in log_files(path) if n.endswith(".tmp")]


# --------------------------------------------------------------- bad input
@pytest.mark.parametrize("kwargs, error", [
    ({"parts": 0}, InvalidArgumentError),
    ({"parts": -2}, InvalidArgumentError),
    ({"parts": "2"}, InvalidArgumentError),
    ({"parts": True}, InvalidArgumentError),
    ({"version": -1}, InvalidArgumentError),
    ({"version": "3"}, InvalidArgumentError),
    ({"version": 99}, VersionNotFoundError),
])
def test_bad_arguments_change_nothing(tmp_path, kwargs, error):
    path = make_table(tmp_path / "t")
    before = log_files(path)
    with pytest.raises(error):
        DeltaTable(str(path)).checkpoint(**kwargs)
    assert log_files(path) == before


def test_multipart_refused_on_v2_checkpoint_tables(copy_table):
    path = copy_table("delta-golden/v2-checkpoint-parquet")
    before = log_files(path)
    with pytest.raises(InvalidArgumentError, match="v2Checkpoint"):
        DeltaTable(str(path)).checkpoint(parts=2)
    assert log_files(path) == before


# ---------------------------------------------------------- managed commits
def test_managed_commit_table_checkpoints_only_backfilled_versions(tmp_path):
    from airflow_provider_delta.log import InMemoryCommitOwner
    owner = InMemoryCommitOwner(backfill_batch_size=100)
    schema = pa.schema([("id", pa.int64())])
    table = DeltaTable.create(str(tmp_path / "m"), schema, commit_owner=owner)
    for i in range(3):
        table.write(pa.table({"id": [i]}, schema=schema))
    path = tmp_path / "m"
    before = log_files(path)
    assert not (path / LOG / f"{3:020d}.json").exists()
    with pytest.raises(InvalidTableStateError, match="backfill"):
        table.checkpoint()
    with pytest.raises(InvalidArgumentError, match="backfill"):
        table.checkpoint(version=2)
    assert log_files(path) == before
    table.backfill()
    assert table.checkpoint() == 3
    assert (path / LOG / f"{3:020d}.checkpoint.parquet").exists()


# ------------------------------------------------------------ auto checkpoint
def test_auto_checkpoint_follows_checkpoint_interval(tmp_path):
    schema = pa.schema([("id", pa.int64())])
    table = DeltaTable.create(str(tmp_path / "a"), schema, properties={"delta.checkpointInterval": "2"})
    for i in range(5):
        table.write(pa.table({"id": [i]}, schema=schema))
    cps = sorted(n for n in log_files(tmp_path / "a") if ".checkpoint." in n)
    assert cps == [f"{2:020d}.checkpoint.parquet", f"{4:020d}.checkpoint.parquet"]
    assert json.loads((tmp_path / "a" / LOG / "_last_checkpoint").read_text())["version"] == 4


def test_maybe_auto_checkpoint_rules(tmp_path, caplog):
    path = make_table(tmp_path / "t")  # versions 0..4, default interval 10
    table = DeltaTable(str(path))
    assert cpmod.maybe_auto_checkpoint(table, 0) is None
    assert cpmod.maybe_auto_checkpoint(table, 3) is None
    assert not [n for n in log_files(path) if ".checkpoint." in n]
    # interval from the table property
    with table.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.checkpointInterval": "5"})
    assert (path / LOG / f"{5:020d}.checkpoint.parquet").exists()  # written by the commit's hook
    os.remove(path / LOG / f"{5:020d}.checkpoint.parquet")
    table.auto_checkpoint = False
    assert cpmod.maybe_auto_checkpoint(table, 5) is None
    assert not (path / LOG / f"{5:020d}.checkpoint.parquet").exists()
    table.auto_checkpoint = True
    assert cpmod.maybe_auto_checkpoint(table, 5) == 5


def test_auto_checkpoint_failure_is_logged_not_raised(tmp_path, monkeypatch, caplog):
    path = make_table(tmp_path / "t")
    table = DeltaTable(str(path))
    def boom(*a, **k):
        raise OSError("no space left")
    monkeypatch.setattr(cpmod, "write_checkpoint", boom)
    with table.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.checkpointInterval": "1"})
    assert table.latest_version() == 5
    assert cpmod.maybe_auto_checkpoint(table, 5) is None
    assert "automatic checkpoint" in caplog.text


def test_invalid_checkpoint_interval(tmp_path):
    with pytest.raises(InvalidTableStateError):
        cpmod.checkpoint_interval({"delta.checkpointInterval": "0"})
    with pytest.raises(InvalidTableStateError):
        cpmod.checkpoint_interval({"delta.checkpointInterval": "ten"})
    assert cpmod.checkpoint_interval({}) == 10


# ------------------------------------------------- corpus tables round trip
DAT_TABLES = ["basic_append", "basic_partitioned", "multi_partitioned", "partitioned_with_null",
              "nested_types", "with_checkpoint", "no_replay", "stats_as_struct", "column_mapping",
              "deletion_vectors", "timestamp_ntz", "all_primitive_types", "with_schema_change"]


@pytest.mark.parametrize("name", DAT_TABLES)
def test_dat_tables_read_the_same_from_our_checkpoint(copy_table, name):
    path = copy_table(f"dat/{name}/delta")
    snap = DeltaTable(str(path)).snapshot()
    # with writeStatsAsJson=false a checkpoint keeps stats only as stats_parsed (as Spark does)
    json_stats = snap.metadata.configuration.get("delta.checkpoint.writeStatsAsJson", "true") != "false"
    before_files, before_rows, before_rs = our_files(path, json_stats), our_rows(path), rs_state(path)
    v = DeltaTable(str(path)).checkpoint(parts=2 if name.startswith("basic") else None)
    delete_commits_before(path, v)
    after = DeltaTable(str(path)).snapshot()
    assert after.version == snap.version and after.segment.checkpoint_version == v
    assert our_files(path, json_stats) == before_files
    assert our_rows(path) == before_rows
    assert rs_state(path) == before_rs


def test_missing_partition_values_are_written_as_empty_maps():
    # some writers omit partitionValues on unpartitioned tables; an add must carry a map
    files = pa.table({"path": ["a b.parquet", "c.parquet"],
                      "partition_values": pa.array([None, [("p", "1")]], action_schemas.STR_MAP)})
    layout = cprows.CheckpointLayout(pa.schema([]), pa.struct(action_schemas.ADD_BASE_FIELDS), False, None, (), None)
    add = cprows.add_column(files, layout)
    assert add.field("partitionValues").to_pylist() == [[], [("p", "1")]]
    assert add.field("path").to_pylist() == ["a%20b.parquet", "c.parquet"]


def test_checkpoint_on_non_local_storage(tmp_path, monkeypatch):
    # memory:// goes through the fsspec path: parts staged in the temp dir, published with
    # put-if-absent
    import tempfile
    import uuid as _uuid
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    uri = f"memory://cp-{_uuid.uuid4().hex}/t"
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    table = DeltaTable.create(uri, schema, partition_by=["p"])
    for i in range(3):
        table.write(pa.table({"id": [i], "p": ["a b"]}, schema=schema))
    table.write(pa.table({"id": [9], "p": ["a b"]}, schema=schema), mode="overwrite")
    assert table.checkpoint(parts=2) == 4
    names = {e.name for e in table.storage.list_dir(LOG)}
    assert {f"{4:020d}.checkpoint.{i:010d}.0000000002.parquet" for i in (1, 2)} <= names
    assert os.listdir(tmp_path) == []   # staging files cleaned up
    for v in range(4):
        table.storage.delete(f"{LOG}/{v:020d}.json")
    snap = DeltaTable(uri).snapshot()
    assert snap.segment.checkpoint_version == 4
    assert snap.to_pyarrow().to_pylist() == [{"id": 9, "p": "a b"}]
    assert snap.tombstones().num_rows == 3
