"""Delta Spark as the oracle: its answers about a table, ours, and the differences between them.

Delta Spark's answers come from its public entry points (``versionAsOf`` / ``timestampAsOf``
reads, ``DESCRIBE HISTORY``, ``DESCRIBE DETAIL``) and from the Delta snapshot behind a
time-travel read (the ``TahoeLogFileIndex`` of the analyzed plan: its version, its
``allFiles``, protocol and metadata). Ours come only from the public API
(``airflow_provider_delta.log.DeltaTable`` and its errors).

Compared at each version: live files (path, size, partition values, deletion vector; and for
files both sides list, modificationTime, stats and tags), protocol, metadata, schema, rows,
optionally txn versions; for the table: history, DESCRIBE DETAIL, and the version a timestamp
just before, at and just after every commit resolves to.

To stay fast on 2 cores, the live files of all versions are collected in one Spark job
(a union of the snapshots' ``allFiles``), and so are the rows of all versions, read through
the same snapshots (whose file lists Delta Spark has cached by then).

``compare_table`` returns a list of human-readable differences (empty when we agree with
Delta Spark); tests assert it is empty, so a failure names every difference at once.
"""
from __future__ import annotations

import datetime as dt
import decimal
import json
from dataclasses import dataclass, field
from functools import reduce
from typing import Any, Callable, Iterable
from urllib.parse import unquote

import pyarrow as pa

from airflow_provider_delta.log import DeltaTable, TimestampOutOfRangeError, UnsupportedFeatureError

OUT_OF_RANGE = "out of range"
#: commitInfo fields compared between DESCRIBE HISTORY and DeltaTable.history()
HISTORY_FIELDS = ("operation", "operationParameters", "readVersion", "isolationLevel", "isBlindAppend",
                  "operationMetrics", "userMetadata", "engineInfo")


# --------------------------------------------------------------------------- Delta Spark
def fmt_ms(ms: int) -> str:
    """Epoch ms as a Spark timestamp literal in the session time zone (UTC in the tests)."""
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _location(df):
    """The Delta file index behind a DataFrame read with format('delta')."""
    leaves = df._jdf.queryExecution().analyzed().collectLeaves()
    for i in range(leaves.size()):
        leaf = leaves.apply(i)
        try:
            return leaf.relation().location()
        except Exception:  # not a LogicalRelation
            continue
    raise AssertionError("no Delta relation in the plan")


def spark_read(spark, path: str, version: int | None = None, timestamp_ms: int | None = None):
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    if timestamp_ms is not None:
        reader = reader.option("timestampAsOf", fmt_ms(timestamp_ms))
    return reader.load(path)


def spark_snapshot(spark, path: str, version: int):
    """(DataFrame, JVM Snapshot) of ``path`` at ``version`` as Delta Spark resolves it."""
    df = spark_read(spark, path, version=version)
    return df, _location(df).getSnapshot()


def spark_version_at(spark, path: str, ms: int) -> int | str:
    """The version Delta Spark's timestampAsOf resolves ``ms`` to, or OUT_OF_RANGE, or an error."""
    try:
        return int(_location(spark_read(spark, path, timestamp_ms=ms)).version())
    except Exception as e:  # AnalysisException and friends
        text = str(e)
        if ("DELTA_TIMESTAMP_GREATER_THAN_COMMIT" in text or "DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION" in text
                or "DELTA_TIMESTAMP_INVALID" in text):
            return OUT_OF_RANGE
        return f"error: {text.splitlines()[0][:200]}"


def spark_latest_version(spark, path: str) -> int:
    return int(spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()[0]["version"])


def spark_history(spark, path: str) -> dict[int, dict[str, Any]]:
    rows = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").selectExpr(
        "version", "unix_millis(timestamp) AS timestamp", *HISTORY_FIELDS).collect()
    out = {}
    for r in rows:
        d = r.asDict()
        for k in ("operationParameters", "operationMetrics"):
            d[k] = dict(d[k]) if d[k] is not None else None
        out[int(d["version"])] = d
    return out


def spark_detail(spark, path: str) -> dict[str, Any]:
    r = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").selectExpr(
        "id", "name", "description", "unix_millis(createdAt) AS createdAt",
        "unix_millis(lastModified) AS lastModified", "partitionColumns", "numFiles", "sizeInBytes",
        "properties", "minReaderVersion", "minWriterVersion", "tableFeatures").collect()[0]
    d = r.asDict()
    d["properties"] = dict(d["properties"] or {})
    return d


def _dv(d: Any) -> tuple | None:
    if d is None:
        return None
    if not isinstance(d, dict):
        d = d.asDict()
    return tuple(sorted((k, v) for k, v in d.items() if v is not None))


def _pv(d: Any) -> tuple:
    if d is None:
        return ()
    if isinstance(d, list):  # pyarrow map as a list of pairs
        d = dict(d)
    return tuple(sorted(d.items()))


def _stats(text: str | None) -> str | None:
    return None if text is None else json.dumps(json.loads(text), sort_keys=True)


@dataclass
class SparkState:
    files: dict[int, set]            # version -> {(path, size, partition values, deletion vector)}
    details: dict[int, dict]         # version -> {path: (modificationTime, stats, tags)}
    protocol: dict[int, dict]
    metadata: dict[int, dict]
    schema: dict[int, pa.Schema]
    transactions: dict[int, dict[str, int]]
    frames: dict[int, Any]           # version -> the versionAsOf DataFrame (its snapshot's state is cached)


def spark_state(spark, path: str, versions: Iterable[int], with_txns: Iterable[int] = ()) -> SparkState:
    """Live files, protocol, metadata, schema (and txn versions) at each version, by Delta Spark."""
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType
    versions = list(versions)
    with_txns = set(with_txns)
    frames, protocol, metadata, schema, txns, reads = [], {}, {}, {}, {}, {}
    for v in versions:
        reads[v], snap = spark_snapshot(spark, path, v)
        frames.append(DataFrame(snap.allFiles().toDF(), spark).select(
            F.lit(v).alias("v"), "path", "size", "partitionValues", "deletionVector", "modificationTime",
            "stats", "tags"))
        protocol[v] = normalize_protocol(json.loads(snap.protocol().json())["protocol"])
        meta = json.loads(snap.metadata().json())["metaData"]
        metadata[v] = normalize_metadata(meta)
        schema[v] = to_arrow_schema(StructType.fromJson(json.loads(meta["schemaString"])), timezone="UTC")
        txns[v] = {}
        it = snap.transactions().iterator() if v in with_txns else None  # scala Map[String, Long]: a job
        while it is not None and it.hasNext():
            kv = it.next()
            txns[v][str(kv._1())] = int(kv._2())
    files: dict[int, set] = {v: set() for v in versions}
    details: dict[int, dict] = {v: {} for v in versions}
    if frames:
        for r in reduce(lambda a, b: a.unionAll(b), frames).collect():
            fp = unquote(r["path"])
            files[r["v"]].add((fp, int(r["size"]), _pv(r["partitionValues"]), _dv(r["deletionVector"])))
            details[r["v"]][fp] = (r["modificationTime"], _stats(r["stats"]), _pv(r["tags"]) or None)
    return SparkState(files, details, protocol, metadata, schema, txns, reads)


def spark_rows(spark, path: str, versions: Iterable[int], reads: dict[int, Any] | None = None) -> dict[int, list]:
    """Rows at each version (sorted, normalized), read by Delta Spark in one job.

    ``reads``: versionAsOf DataFrames already made (spark_state's): their snapshots' file
    lists are cached, so the scans do not replay the log again."""
    from pyspark.sql import functions as F
    versions = list(versions)
    if not versions:
        return {}
    frames, columns = [], {}
    for v in versions:
        df = (reads or {}).get(v)
        if df is None:
            df = spark_read(spark, path, version=v)
        columns[v] = df.columns
        frames.append(df.withColumn("__version", F.lit(v)))
    table = reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), frames).toArrow()
    out: dict[int, list] = {v: [] for v in versions}
    for row in table.to_pylist():
        v = row.pop("__version")
        out[v].append({c: row[c] for c in columns[v]})
    return {v: normalize_rows(rows) for v, rows in out.items()}


# --------------------------------------------------------------------------- ours
def normalize_protocol(p: dict) -> dict:
    p = dict(p)
    for k in ("readerFeatures", "writerFeatures"):
        if p.get(k) is not None:
            p[k] = sorted(p[k])
    return p


def normalize_metadata(m: dict) -> dict:
    m = {k: v for k, v in m.items() if v is not None}
    if "schemaString" in m:
        m["schemaString"] = json.loads(m["schemaString"])
    m.setdefault("partitionColumns", [])
    m.setdefault("configuration", {})
    fmt = m.setdefault("format", {})
    fmt.setdefault("provider", "parquet")
    fmt["options"] = fmt.get("options") or {}
    return m


def _norm_value(v: Any) -> Any:
    if isinstance(v, dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=dt.timezone.utc)
        return ("ts", v.astimezone(dt.timezone.utc).isoformat())
    if isinstance(v, decimal.Decimal):
        return ("dec", str(v.normalize()) if v == v else "nan")
    if isinstance(v, float) and v != v:
        return ("nan",)
    if isinstance(v, dict):
        return tuple(sorted((k, _norm_value(x)) for k, x in v.items()))
    if isinstance(v, list):
        return tuple(_norm_value(x) for x in v)
    if isinstance(v, tuple):
        return tuple(_norm_value(x) for x in v)
    return v


def normalize_rows(rows: list[dict]) -> list:
    return sorted((tuple(sorted((k, _norm_value(v)) for k, v in r.items())) for r in rows), key=repr)


def our_files(snap) -> set:
    t = snap.files().select(["path", "size", "partition_values", "deletion_vector"]).to_pylist()
    return {(r["path"], int(r["size"]), _pv(r["partition_values"]), _dv(r["deletion_vector"])) for r in t}


def our_file_details(snap) -> dict:
    t = snap.files().select(["path", "modification_time", "stats", "tags"]).to_pylist()
    return {r["path"]: (r["modification_time"], _stats(r["stats"]), _pv(r["tags"]) or None) for r in t}


def our_version_at(table: DeltaTable, ms: int) -> int | str:
    try:
        return table.snapshot(timestamp=ms).version
    except TimestampOutOfRangeError:
        return OUT_OF_RANGE
    except Exception as e:  # noqa: BLE001 - reported as a difference
        return f"error: {type(e).__name__}: {str(e).splitlines()[0][:200]}"


def _schema_diff(ours: pa.Schema, theirs: pa.Schema) -> str | None:
    if ours.equals(theirs, check_metadata=False):
        return None
    return f"ours {[(f.name, str(f.type), f.nullable) for f in ours]} vs Delta Spark " \
           f"{[(f.name, str(f.type), f.nullable) for f in theirs]}"


def _set_diff(ours: set, theirs: set) -> str:
    return f"only ours: {sorted(ours - theirs, key=repr)}; only Delta Spark: {sorted(theirs - ours, key=repr)}"


# --------------------------------------------------------------------------- comparison
@dataclass
class Expect:
    """What a scenario expects beyond equality."""
    #: versions whose rows we cannot read yet: our to_pyarrow must raise UnsupportedFeatureError
    #: with the feature this returns for the snapshot (None: rows are compared)
    unsupported_rows: Callable[[Any], str | None] | None = None
    #: versions not compared row by row (e.g. data files vacuumed away)
    skip_rows: set[int] = field(default_factory=set)
    #: versions whose state is not compared (e.g. log cleaned up)
    skip_versions: set[int] = field(default_factory=set)


def compare_table(spark, path: str, versions: Iterable[int] | None = None, *, rows: bool = True,
                  history: bool = True, timestamps: bool = True, detail: bool = True,
                  txns: Iterable[int] = (), expect: Expect | None = None) -> list[str]:
    """Every difference between our answers and Delta Spark's about the table at ``path``:
    at each of ``versions`` (default: all), and at the versions in ``txns`` also the
    idempotent-writer txn versions (each costs Delta Spark a job)."""
    expect = expect or Expect()
    diffs: list[str] = []
    table = DeltaTable(path)
    spark_latest = spark_latest_version(spark, path)
    ours_latest = table.latest_version()
    if ours_latest != spark_latest:
        diffs.append(f"latest version: ours {ours_latest}, Delta Spark {spark_latest}")
    if versions is None:
        versions = range(0, spark_latest + 1)
    versions = [v for v in versions if v not in expect.skip_versions]
    txns = set(txns)
    state = spark_state(spark, path, versions, with_txns=txns)
    row_versions = []
    snaps = {}
    for v in versions:
        try:
            snap = table.snapshot(version=v)
        except Exception as e:  # noqa: BLE001
            diffs.append(f"v{v}: we cannot load the snapshot Delta Spark reads: {type(e).__name__}: {e}")
            continue
        snaps[v] = snap
        if snap.version != v:
            diffs.append(f"v{v}: our snapshot says version {snap.version}")
        f_ours = our_files(snap)
        if f_ours != state.files[v]:
            diffs.append(f"v{v}: live files differ: {_set_diff(f_ours, state.files[v])}")
        d_ours = our_file_details(snap)
        for fp in sorted(set(d_ours) & set(state.details[v])):
            for name, o, t in zip(("modificationTime", "stats", "tags"), d_ours[fp], state.details[v][fp]):
                if o != t:
                    diffs.append(f"v{v}: file {fp}: {name} ours {o!r}, Delta Spark {t!r}")
        p_ours = normalize_protocol(snap.protocol.to_json())
        if p_ours != state.protocol[v]:
            diffs.append(f"v{v}: protocol: ours {p_ours}, Delta Spark {state.protocol[v]}")
        m_ours = normalize_metadata(snap.metadata.to_json())
        if m_ours != state.metadata[v]:
            keys = sorted(k for k in set(m_ours) | set(state.metadata[v])
                          if m_ours.get(k) != state.metadata[v].get(k))
            diffs.append(f"v{v}: metadata differs in {keys}: ours {[m_ours.get(k) for k in keys]}, "
                         f"Delta Spark {[state.metadata[v].get(k) for k in keys]}")
        s_diff = _schema_diff(snap.schema, state.schema[v])
        if s_diff:
            diffs.append(f"v{v}: schema: {s_diff}")
        t_ours = {k: ver for k, (ver, _) in snap.transactions(include_expired=True).items()}
        if v in txns and t_ours != state.transactions[v]:
            diffs.append(f"v{v}: txn versions: ours {t_ours}, Delta Spark {state.transactions[v]}")
        if not rows or v in expect.skip_rows:
            continue
        feature = expect.unsupported_rows(snap) if expect.unsupported_rows else None
        if feature is None:
            row_versions.append(v)
            continue
        try:
            snap.to_pyarrow()
            diffs.append(f"v{v}: to_pyarrow read rows although the table needs {feature} (expected "
                         "UnsupportedFeatureError until that reader lands)")
        except UnsupportedFeatureError as e:
            if getattr(e, "feature", feature) != feature:
                diffs.append(f"v{v}: UnsupportedFeatureError names feature {e.feature!r}, expected {feature!r}")
    if row_versions:
        theirs = spark_rows(spark, path, row_versions, state.frames)
        for v in row_versions:
            try:
                ours = normalize_rows(snaps[v].to_pyarrow().to_pylist())
            except Exception as e:  # noqa: BLE001
                diffs.append(f"v{v}: to_pyarrow failed: {type(e).__name__}: {e}")
                continue
            if ours != theirs[v]:
                diffs.append(f"v{v}: rows differ: only ours {sorted(set(ours) - set(theirs[v]), key=repr)[:5]}, "
                             f"only Delta Spark {sorted(set(theirs[v]) - set(ours), key=repr)[:5]} "
                             f"(counts {len(ours)} vs {len(theirs[v])})")
    hist = spark_history(spark, path) if (history or timestamps) else {}
    if history:
        diffs += compare_history(table, hist)
    if timestamps:
        diffs += compare_timestamps(spark, path, table, hist)
    if detail:
        diffs += compare_detail(spark, path, table)
    return diffs


def compare_history(table: DeltaTable, hist: dict[int, dict]) -> list[str]:
    diffs = []
    ours = {h["version"]: h for h in table.history()}
    if sorted(ours) != sorted(hist):
        diffs.append(f"history versions: ours {sorted(ours)}, Delta Spark {sorted(hist)}")
    for v in sorted(set(ours) & set(hist)):
        o, s = ours[v], hist[v]
        if o.get("timestamp") != s["timestamp"]:
            diffs.append(f"history v{v}: timestamp ours {o.get('timestamp')}, Delta Spark {s['timestamp']}")
        for k in HISTORY_FIELDS:
            ov, sv = o.get(k), s[k]
            if k in ("operationParameters", "operationMetrics") and ov is not None:
                ov = {a: (b if b is None or isinstance(b, str) else json.dumps(b)) for a, b in ov.items()}
            if ov != sv:
                diffs.append(f"history v{v}: {k} ours {ov!r}, Delta Spark {sv!r}")
    return diffs


def probe_times(hist: dict[int, dict]) -> list[int]:
    """Just before, at and just after every commit timestamp."""
    out = set()
    for h in hist.values():
        out.update((h["timestamp"] - 1, h["timestamp"], h["timestamp"] + 1))
    return sorted(out)


def compare_timestamps(spark, path: str, table: DeltaTable, hist: dict[int, dict],
                       extra: Iterable[int] = ()) -> list[str]:
    diffs = []
    for ms in sorted(set(probe_times(hist)) | set(extra)):
        theirs = spark_version_at(spark, path, ms)
        ours = our_version_at(table, ms)
        if ours != theirs:
            diffs.append(f"timestamp {ms} ({fmt_ms(ms)}): ours {ours!r}, Delta Spark timestampAsOf {theirs!r}")
    return diffs


def compare_detail(spark, path: str, table: DeltaTable) -> list[str]:
    """DESCRIBE DETAIL at the latest version. Not its lastModified: Delta Spark fills it with the
    modification time of the latest commit file, also on in-commit-timestamp tables, where our
    snapshot.timestamp is (rightly, by the protocol) the in-commit timestamp."""
    d = spark_detail(spark, path)
    snap = table.snapshot()
    files = snap.files()
    ours = {
        "id": snap.metadata.id, "name": snap.metadata.name, "description": snap.metadata.description,
        "createdAt": snap.metadata.created_time,
        "partitionColumns": list(snap.partition_columns), "numFiles": files.num_rows,
        "sizeInBytes": sum(files.column("size").to_pylist()), "properties": dict(snap.configuration),
        "minReaderVersion": snap.protocol.min_reader_version, "minWriterVersion": snap.protocol.min_writer_version,
    }
    diffs = [f"DESCRIBE DETAIL {k}: ours {ours[k]!r}, Delta Spark {d[k]!r}" for k in ours if ours[k] != d[k]]
    if snap.protocol.writer_features is not None:
        feats = sorted(set(snap.protocol.writer_features) | set(snap.protocol.reader_features or ()))
        if feats != sorted(d["tableFeatures"]):
            diffs.append(f"DESCRIBE DETAIL tableFeatures: ours {feats}, Delta Spark {sorted(d['tableFeatures'])}")
    return diffs


def assert_same(diffs: list[str], what: str) -> None:
    assert not diffs, f"{what}: {len(diffs)} difference(s) from Delta Spark:\n  " + "\n  ".join(diffs)
