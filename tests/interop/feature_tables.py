"""Tables that carry one table feature each, and the operations the feature matrix runs on them.

Most tables are made by Delta Spark (so the feature is on the table the way the reference
engine puts it there: protocol, properties, domains, ``.crc`` files); ``invariants`` by our
writer (Delta Spark's SQL has no way to declare one); ``catalogManaged`` is delta-kernel-rs's
corpus table (no catalog here can make one); ``futureFeatureX`` is a Delta Spark table whose
protocol a hand-written commit upgrades to a feature nobody knows, once as a writer feature
and once as a reader-writer feature.

Every Delta Spark table gets three commits and, with ``delta.checkpointInterval=2``, Delta
Spark's own checkpoint at version 2, so that cleanup and compaction have work to do.

``EXPECTED_REFUSALS`` is the matrix the tests hold the package to: per feature, the
operations that must be refused with ``UnsupportedFeatureError``; every other operation must
succeed. It is written out here from the feature table of docs/log/table-features.md, not derived from the
package's own feature sets, so a change in the gate shows up as a failing test.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Callable

import pyarrow as pa

from airflow_provider_delta.log import DeltaTable, StagedCommitsCatalog
from airflow_provider_delta.log.base.names import commit_path
from airflow_provider_delta.log.base.schema import DELTA_METADATA_KEY

DAY_MS = 86_400_000
CHECKPOINT_EVERY_2 = "'delta.checkpointInterval' = '2'"

#: feature -> Delta Spark SQL making a table with it ({p}: the path). Every list makes versions 0..2.
SPARK_TABLES: dict[str, list[str]] = {
    "appendOnly": ["CREATE TABLE delta.`{p}` (id BIGINT, s STRING) USING delta "
                   "TBLPROPERTIES ('delta.appendOnly' = 'true', {cp})",
                   "INSERT INTO delta.`{p}` VALUES (1, 'a')", "INSERT INTO delta.`{p}` VALUES (2, 'b')"],
    "checkConstraints": ["CREATE TABLE delta.`{p}` (id BIGINT, s STRING) USING delta TBLPROPERTIES ({cp})",
                         "INSERT INTO delta.`{p}` VALUES (1, 'a')",
                         "ALTER TABLE delta.`{p}` ADD CONSTRAINT positive CHECK (id > 0)"],
    "generatedColumns": ["CREATE TABLE delta.`{p}` (id BIGINT, twice BIGINT GENERATED ALWAYS AS (id * 2)) "
                         "USING delta TBLPROPERTIES ({cp})",
                         "INSERT INTO delta.`{p}` (id) VALUES (1)", "INSERT INTO delta.`{p}` (id) VALUES (2)"],
    "changeDataFeed": ["CREATE TABLE delta.`{p}` (id BIGINT, s STRING) USING delta "
                       "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true', {cp})",
                       "INSERT INTO delta.`{p}` VALUES (1, 'a'), (2, 'b')",
                       "UPDATE delta.`{p}` SET s = 'u' WHERE id = 2"],
    "columnMapping": ["CREATE TABLE delta.`{p}` (id BIGINT, s STRING) USING delta "
                      "TBLPROPERTIES ('delta.columnMapping.mode' = 'name', {cp})",
                      "INSERT INTO delta.`{p}` VALUES (1, 'a')",
                      "ALTER TABLE delta.`{p}` RENAME COLUMN s TO s2"],
    "identityColumns": ["CREATE TABLE delta.`{p}` (k BIGINT GENERATED ALWAYS AS IDENTITY, id BIGINT) "
                        "USING delta TBLPROPERTIES ({cp})",
                        "INSERT INTO delta.`{p}` (id) VALUES (1)", "INSERT INTO delta.`{p}` (id) VALUES (2)"],
    "deletionVectors": ["CREATE TABLE delta.`{p}` (id BIGINT, s STRING) USING delta "
                        "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true', {cp})",
                        "INSERT INTO delta.`{p}` VALUES (1, 'a'), (2, 'b'), (3, 'c')",
                        "DELETE FROM delta.`{p}` WHERE id = 2"],
    "rowTracking": ["CREATE TABLE delta.`{p}` (id BIGINT, s STRING) USING delta "
                    "TBLPROPERTIES ('delta.enableRowTracking' = 'true', {cp})",
                    "INSERT INTO delta.`{p}` VALUES (1, 'a')", "INSERT INTO delta.`{p}` VALUES (2, 'b')"],
    "timestampNtz": ["CREATE TABLE delta.`{p}` (id BIGINT, t TIMESTAMP_NTZ) USING delta TBLPROPERTIES ({cp})",
                     "INSERT INTO delta.`{p}` VALUES (1, TIMESTAMP_NTZ'2026-01-02 03:04:05.123456')",
                     "INSERT INTO delta.`{p}` VALUES (2, NULL)"],
    "typeWidening": ["CREATE TABLE delta.`{p}` (id INT, s STRING) USING delta "
                     "TBLPROPERTIES ('delta.enableTypeWidening' = 'true', {cp})",
                     "INSERT INTO delta.`{p}` VALUES (1, 'a')",
                     "ALTER TABLE delta.`{p}` ALTER COLUMN id TYPE BIGINT",
                     "INSERT INTO delta.`{p}` VALUES (5000000000, 'wide')"],
    "domainMetadata": ["CREATE TABLE delta.`{p}` (id BIGINT, s STRING) USING delta "
                       "TBLPROPERTIES ('delta.feature.domainMetadata' = 'supported', {cp})",
                       "INSERT INTO delta.`{p}` VALUES (1, 'a')", "INSERT INTO delta.`{p}` VALUES (2, 'b')"],
    "v2Checkpoint": ["CREATE TABLE delta.`{p}` (id BIGINT, s STRING) USING delta "
                     "TBLPROPERTIES ('delta.checkpointPolicy' = 'v2', {cp})",
                     "INSERT INTO delta.`{p}` VALUES (1, 'a')", "INSERT INTO delta.`{p}` VALUES (2, 'b')"],
    "icebergCompatV1": ["CREATE TABLE delta.`{p}` (id BIGINT, s STRING) USING delta "
                        "TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
                        "'delta.enableIcebergCompatV1' = 'true', {cp})",
                        "INSERT INTO delta.`{p}` VALUES (1, 'a')", "INSERT INTO delta.`{p}` VALUES (2, 'b')"],
    "icebergCompatV2": ["CREATE TABLE delta.`{p}` (id BIGINT, s STRING) USING delta "
                        "TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
                        "'delta.enableIcebergCompatV2' = 'true', {cp})",
                        "INSERT INTO delta.`{p}` VALUES (1, 'a')", "INSERT INTO delta.`{p}` VALUES (2, 'b')"],
    "inCommitTimestamp": ["CREATE TABLE delta.`{p}` (id BIGINT, s STRING) USING delta "
                          "TBLPROPERTIES ('delta.enableInCommitTimestamps' = 'true', {cp})",
                          "INSERT INTO delta.`{p}` VALUES (1, 'a')", "INSERT INTO delta.`{p}` VALUES (2, 'b')"],
    "vacuumProtocolCheck": ["CREATE TABLE delta.`{p}` (id BIGINT, s STRING) USING delta "
                            "TBLPROPERTIES ('delta.feature.vacuumProtocolCheck' = 'supported', {cp})",
                            "INSERT INTO delta.`{p}` VALUES (1, 'a')", "INSERT INTO delta.`{p}` VALUES (2, 'b')"],
    "checkpointProtection": ["CREATE TABLE delta.`{p}` (id BIGINT, s STRING) USING delta "
                             "TBLPROPERTIES ('delta.feature.checkpointProtection' = 'supported', {cp})",
                             "INSERT INTO delta.`{p}` VALUES (1, 'a')", "INSERT INTO delta.`{p}` VALUES (2, 'b')"],
    "variantType": ["CREATE TABLE delta.`{p}` (id BIGINT, v VARIANT) USING delta TBLPROPERTIES ({cp})",
                    "INSERT INTO delta.`{p}` SELECT 1, parse_json('{{\"a\": 1}}')",
                    "INSERT INTO delta.`{p}` SELECT 2, parse_json('[1, 2]')"],
    "clustering": ["CREATE TABLE delta.`{p}` (id BIGINT, s STRING) USING delta CLUSTER BY (id) "
                   "TBLPROPERTIES ({cp})",
                   "INSERT INTO delta.`{p}` VALUES (1, 'a')", "INSERT INTO delta.`{p}` VALUES (2, 'b')"],
    # the invented features start from a plain Delta Spark table; a hand-written commit adds them
    "futureFeatureX": ["CREATE TABLE delta.`{p}` (id BIGINT, s STRING) USING delta TBLPROPERTIES ({cp})",
                       "INSERT INTO delta.`{p}` VALUES (1, 'a')", "INSERT INTO delta.`{p}` VALUES (2, 'b')"],
}
SPARK_TABLES["futureFeatureX (reader-writer)"] = SPARK_TABLES["futureFeatureX"]

#: the feature each table is about (the invented reader-writer variant carries futureFeatureX too)
FEATURE_OF = {name: name.split(" ")[0] for name in [*SPARK_TABLES, "invariants", "catalogManaged"]}
TABLES = sorted(FEATURE_OF)

ALL_OPERATIONS = ("snapshot", "rows", "write", "transaction", "checkpoint", "compaction", "cleanup", "vacuum",
                  "enable ICT", "disable ICT")
READS = ("snapshot", "rows")
COMMITS = ("write", "transaction", "enable ICT", "disable ICT")
DATA = ("write",)

#: table -> operations that must raise UnsupportedFeatureError naming the feature (docs/log/table-features.md).
EXPECTED_REFUSALS: dict[str, set[str]] = {
    # SQL expressions every new row must satisfy: no data-adding commits
    "invariants": set(DATA), "checkConstraints": set(DATA), "generatedColumns": set(DATA),
    "identityColumns": set(DATA),
    # data files would need physical column names
    "columnMapping": set(DATA),
    # rules about new data this package does not implement (row ids, clustering, Iceberg metadata)
    "rowTracking": set(COMMITS), "clustering": set(COMMITS), "icebergCompatV1": set(COMMITS),
    "icebergCompatV2": set(COMMITS),
    # variant columns have no Arrow type here: no rows, and no commits (each validates the schema)
    "variantType": {"rows", *COMMITS},
    # commits belong to the catalog; cleanup and vacuum need its permission. (Enabling in-commit
    # timestamps is a no-op there: catalog-managed tables have them on.)
    "catalogManaged": {"write", "transaction", "disable ICT", "cleanup", "vacuum"},
    "futureFeatureX": set(ALL_OPERATIONS) - set(READS),
    "futureFeatureX (reader-writer)": set(ALL_OPERATIONS),
}

#: words of the refusal message that name the operation. Every operation reads the table first, so
#: an unknown reader feature stops each of them at that read ("cannot read").
OPERATION_WORDS = {
    "snapshot": "cannot read", "rows": "cannot read|by this reader",
    "write": "cannot commit|does not add data|writing its data files|not supported by this reader",
    "transaction": "cannot commit", "enable ICT": "cannot commit", "disable ICT": "cannot commit",
    "checkpoint": "cannot write a checkpoint", "compaction": "cannot compact the log",
    "cleanup": "cannot clean up metadata", "vacuum": "cannot vacuum",
}
READER_FEATURE_TABLES = {"futureFeatureX (reader-writer)"}


# ------------------------------------------------------------------------------ building
def build_spark_table(spark, name: str, path: str) -> None:
    for statement in SPARK_TABLES[name]:
        spark.sql(statement.format(p=path, cp=CHECKPOINT_EVERY_2)).collect()
    if name.startswith("futureFeatureX"):
        reader = ["futureFeatureX"] if "reader" in name else None
        upgrade_protocol(Path(path), reader, ["futureFeatureX"])


def upgrade_protocol(path: Path, reader: list[str] | None, writer: list[str]) -> int:
    """Append a commit by hand whose protocol adds ``writer`` (and ``reader``) features."""
    snap = DeltaTable(str(path)).snapshot()
    proto = snap.protocol
    version = snap.version + 1
    new = {"minReaderVersion": 3 if reader else max(proto.min_reader_version, 1), "minWriterVersion": 7,
           "writerFeatures": sorted({*(proto.writer_features or ("appendOnly", "invariants")), *writer})}
    if reader:
        new["readerFeatures"] = sorted({*(proto.reader_features or ()), *reader})
        new["writerFeatures"] = sorted({*new["writerFeatures"], *reader})
    actions = [{"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "SET TBLPROPERTIES"}},
               {"protocol": new}]
    (path / commit_path(version)).write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return version


def build_invariants_table(path: str) -> None:
    """Our writer: a column with a legacy ``delta.invariants`` expression (writer version 2)."""
    invariant = json.dumps({"expression": {"expression": "id > 0"}})
    schema = pa.schema([pa.field("id", pa.int64(), metadata={DELTA_METADATA_KEY: json.dumps({"delta.invariants": invariant})}),
                        pa.field("s", pa.string())])
    table = DeltaTable.create(path, schema, properties={"delta.checkpointInterval": "2"})
    with table.transaction(operation="WRITE") as txn:
        txn.set_txn("builder", 1)
    with table.transaction(operation="WRITE") as txn:
        txn.set_txn("builder", 2)


def copy_catalog_managed(corpus: Path, path: Path) -> None:
    """delta-kernel-rs's catalog-managed table, with its ratified commits 1 and 2 backfilled the way
    its catalog would (copied to ``_delta_log/<v>.json``), so checkpoints and compaction have
    published versions to work on."""
    shutil.copytree(corpus / "delta-kernel-rs" / "catalog_managed_0", path)
    for d, dirs, files in os.walk(path):
        for n in dirs + files:
            os.chmod(os.path.join(d, n), 0o755 if n in dirs else 0o644)
    staged = path / "_delta_log" / "_staged_commits"
    for name in sorted(os.listdir(staged)):
        shutil.copy2(staged / name, path / commit_path(int(name[:20])))


def catalog_of(path: Path) -> StagedCommitsCatalog:
    names = sorted(os.listdir(path / "_delta_log" / "_staged_commits"))
    return StagedCommitsCatalog({int(n[:20]): n for n in names}, max_ratified_version=2)


def open_table(name: str, path: Path) -> DeltaTable:
    if name == "catalogManaged":
        return DeltaTable(str(path), commit_owner=catalog_of(path))
    return DeltaTable(str(path))


# ------------------------------------------------------------------------------ checks
def tree(root: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under ``root``: size, mtime and a hash of its bytes ('byte-identical')."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            st = os.stat(p)
            with open(p, "rb") as fh:
                digest = hashlib.sha1(fh.read()).hexdigest()
            out[os.path.relpath(p, root)] = (st.st_size, st.st_mtime_ns, digest)
    return out


def plant_old_orphan(path: Path) -> str:
    """A data file no version references, written a month ago: what vacuum must delete."""
    orphan = path / "part-orphan-by-matrix.parquet"
    orphan.write_bytes(b"PAR1 not referenced PAR1")
    old = time.time() - 30 * 24 * 3600
    os.utime(orphan, (old, old))
    return orphan.name


def one_row(schema: pa.Schema) -> pa.Table:
    """A row that fits ``schema`` (our snapshot's Arrow schema): the data the 'write' operation adds."""
    import datetime as dt
    values = {pa.types.is_integer: 7, pa.types.is_string: "matrix", pa.types.is_floating: 1.5,
              pa.types.is_boolean: True,
              pa.types.is_timestamp: dt.datetime(2026, 11, 23, 12, 0, 0, 123456)}
    columns = {}
    for f in schema:
        value = next((v for test, v in values.items() if test(f.type)), None)
        columns[f.name] = pa.array([value], f.type)
    return pa.table(columns, schema=schema)


def operations(name: str, table: DeltaTable) -> dict[str, Callable[[], object]]:
    """The operations of the matrix on ``table`` (each returns something to check, or raises)."""
    def write():
        return table.write(one_row(table.snapshot().schema))

    def transaction():
        with table.transaction(operation="WRITE") as txn:
            txn.set_txn("feature-matrix", 1)
        return txn.version

    def disable_ict():
        with table.transaction(operation="SET TBLPROPERTIES") as txn:
            txn.set_properties({"delta.enableInCommitTimestamps": "false"})
        return txn.version

    return {
        "snapshot": lambda: table.snapshot().files(),
        "rows": lambda: table.snapshot().to_pyarrow(),
        "write": write,
        "transaction": transaction,
        "checkpoint": lambda: table.checkpoint(sidecars=2),
        "compaction": lambda: table.compact_log(1, 2),
        "cleanup": lambda: table.cleanup_metadata(retention_ms=0, truncate=None,
                                                  now_ms=int(time.time() * 1000) + DAY_MS),
        "vacuum": lambda: table.vacuum(retention_hours=0, enforce_retention=False, dry_run=False),
        "enable ICT": table.enable_in_commit_timestamps,
        "disable ICT": disable_ict,
    }
