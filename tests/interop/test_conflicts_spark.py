"""Differential conflict suite: the same losing transaction, run by Delta Spark and by us, against
the same winning commit; we must fail exactly when Delta Spark's ConflictChecker fails, with the
error named after the same exception, or succeed when it succeeds.

Each case copies one table Delta Spark built (each setup is built once per module and copied per
test), and copies that, so both losers start from identical logs. On each copy a loser opens its transaction and declares the same reads and actions:
Delta Spark's through its own ``OptimisticTransaction`` (``DeltaLog.startTransaction``,
``filterFiles``, ``txnVersion``, ``commit`` with the ``Manual Update`` operation), ours through
:class:`Transaction` with the ``Manual Update`` operation too. Then the same winner commits on both
copies (Delta Spark SQL, or our writer), and both losers commit. Afterwards Delta Spark,
deltalake and we read the same rows from each copy.

Data files a loser adds are copies of a live file of the partition (so they are valid on
column-mapping tables too, with physical column names).
"""
from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import deltalake
import pyarrow as pa
import pytest

from airflow_provider_delta.log import ConcurrentModificationError, DeltaTable, InvalidArgumentError, Protocol

pytestmark = pytest.mark.spark

OPERATION = "Manual Update"


# --------------------------------------------------------------------------- the losing transaction
@dataclass
class Loser:
    """What the losing transaction reads and writes (one description, run by both engines)."""

    reads: Any = None              # None | "all" | a value of partition column p
    add_in: Any = "none"           # partition value to add a copy of a live file in; "none": no add
    remove_in: Any = "none"        # partition value whose live files are removed
    data_change: bool = True
    properties: dict[str, str] | None = None
    app_id: str | None = None      # read this txn app id and set it
    protocol: Protocol | None = None
    # filled in when the transactions open
    actions: list[dict] = field(default_factory=list)


def _live(path: str) -> list[dict]:
    """Live add actions (as in the log: camelCase, path as written) of the latest snapshot."""
    files = DeltaTable(path).snapshot().files()
    out = []
    for r in files.to_pylist():
        pv = r["partition_values"]
        pv = dict(pv) if pv is not None else {}
        out.append({"path": r["path"], "partitionValues": pv, "size": r["size"],
                    "modificationTime": r["modification_time"], "stats": r.get("stats")})
    return out


def _pvalue(add: dict) -> str | None:
    values = list(add["partitionValues"].values())
    return values[0] if values else None


def _in_partition(files: list[dict], value: Any) -> list[dict]:
    return [f for f in files if value is None or _pvalue(f) == str(value)]


def plan_actions(path: str, loser: Loser) -> list[dict]:
    """The loser's actions as JSON (the same for both engines; data files copied into ``path``)."""
    files = _live(path)
    actions: list[dict] = []
    if loser.protocol is not None:
        actions.append({"protocol": loser.protocol.to_json()})
    if loser.properties:
        meta = DeltaTable(path).snapshot().metadata.to_json()
        meta["configuration"] = {**meta.get("configuration", {}), **loser.properties}
        actions.append({"metaData": meta})
    if loser.app_id:
        actions.append({"txn": {"appId": loser.app_id, "version": 1, "lastUpdated": int(time.time() * 1000)}})
    if loser.remove_in != "none":
        for f in _in_partition(files, loser.remove_in):
            actions.append({"remove": {"path": f["path"], "deletionTimestamp": int(time.time() * 1000),
                                       "dataChange": loser.data_change, "extendedFileMetadata": True,
                                       "partitionValues": f["partitionValues"], "size": f["size"]}})
    if loser.add_in != "none":
        source = _in_partition(files, loser.add_in)[0]
        directory, _, name = source["path"].rpartition("/")
        new = (directory + "/" if directory else "") + "copy-" + name
        shutil.copyfile(os.path.join(path, source["path"]), os.path.join(path, new))
        actions.append({"add": {"path": new, "partitionValues": source["partitionValues"],
                                "size": source["size"], "modificationTime": int(time.time() * 1000),
                                "dataChange": loser.data_change, "stats": source["stats"]}})
    return actions


def open_spark_loser(spark, path: str, loser: Loser, actions: list[dict]) -> Callable[[], str | None]:
    """Delta Spark's OptimisticTransaction with the loser's reads; returns its commit (-> outcome)."""
    jvm = spark._jvm
    delta = jvm.org.apache.spark.sql.delta
    txn = delta.DeltaLog.forTable(spark._jsparkSession, path).startTransaction()
    to_seq = jvm.scala.jdk.javaapi.CollectionConverters.asScala
    if loser.reads == "all":
        txn.filterFiles()
    elif loser.reads is not None:
        condition = spark.read.format("delta").load(path).where(f"p = {loser.reads}") \
            ._jdf.queryExecution().analyzed().condition()
        txn.filterFiles(to_seq(jvm.java.util.ArrayList([condition])).toSeq(), False)
    if loser.app_id:
        txn.txnVersion(loser.app_id)
    op = getattr(getattr(delta, "DeltaOperations$ManualUpdate$"), "MODULE$")
    jactions = jvm.java.util.ArrayList([delta.actions.Action.fromJson(json.dumps(a)) for a in actions])

    def commit() -> str | None:
        try:
            txn.commit(to_seq(jactions).toSeq(), op)
        except Exception as e:  # Py4JJavaError
            return e.java_exception.getClass().getSimpleName()
        return None
    return commit


def open_our_loser(path: str, loser: Loser, actions: list[dict]) -> Callable[[], str | None]:
    """Our Transaction with the loser's reads and actions; returns its commit (-> outcome)."""
    from airflow_provider_delta.log import AddFile, Metadata, RemoveFile
    table = DeltaTable(path)
    table.auto_checkpoint = False
    # pinned to the version the transaction opens at, as DeltaLog.startTransaction pins its snapshot
    txn = table.transaction(operation=OPERATION, read_version=table.latest_version())
    if loser.reads == "all":
        txn.read_files()
    elif loser.reads is not None:
        txn.read_partitions({"p": loser.reads})
    if loser.app_id:
        txn.transaction_version(loser.app_id)
    for a in actions:
        if "protocol" in a:
            txn.set_protocol(Protocol.from_json(a["protocol"]))
        elif "metaData" in a:
            txn.set_metadata(Metadata.from_json(a["metaData"]))
        elif "txn" in a:
            txn.set_txn(a["txn"]["appId"], a["txn"]["version"])
        elif "remove" in a:
            r = a["remove"]
            txn.remove_file(RemoveFile(r["path"], r["deletionTimestamp"], r["dataChange"], True,
                                       r["partitionValues"], r["size"]))
        elif "add" in a:
            d = a["add"]
            txn.add_file(AddFile(d["path"], d["size"], d["partitionValues"], d["modificationTime"],
                                 d["dataChange"], d["stats"]))

    def commit() -> str | None:
        try:
            txn.commit()
        except ConcurrentModificationError as e:
            return e.spark_name
        except Exception as e:
            return type(e).__name__
        return None
    return commit


# --------------------------------------------------------------------------- winners
def sql(*statements: str) -> Callable[[Any, str], None]:
    def run(spark, path: str) -> None:
        for s in statements:
            spark.sql(s.format(t=f"delta.`{path}`"))
    return run


def spark_txn_write(app_id: str, version: int) -> Callable[[Any, str], None]:
    """An idempotent Delta Spark write (txnAppId/txnVersion), as streaming sinks commit."""
    def run(spark, path: str) -> None:
        df = spark.sql("SELECT CAST(90 AS BIGINT) AS id, 2 AS p")
        df.write.format("delta").mode("append").option("txnAppId", app_id).option("txnVersion", version).save(path)
    return run


def our_append(p: int) -> Callable[[Any, str], None]:
    def run(spark, path: str) -> None:
        DeltaTable(path).write(pa.table({"id": pa.array([80], pa.int64()), "p": pa.array([p], pa.int32())}),
                               mode="append")
    return run


def our_properties(props: dict[str, str]) -> Callable[[Any, str], None]:
    def run(spark, path: str) -> None:
        with DeltaTable(path).transaction(operation="SET TBLPROPERTIES") as txn:
            txn.set_properties(props)
    return run


# --------------------------------------------------------------------------- tables
PARTITIONED = ("CREATE TABLE {t} (id BIGINT, p INT) USING delta PARTITIONED BY (p)",
               "INSERT INTO {t} VALUES (1, 1), (3, 2)", "INSERT INTO {t} VALUES (2, 1), (4, 2)")
MAPPED = ("CREATE TABLE {t} (id BIGINT, p INT) USING delta PARTITIONED BY (p) "
          "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
          "INSERT INTO {t} VALUES (1, 1), (3, 2)")
UNPARTITIONED = ("CREATE TABLE {t} (id BIGINT, p INT) USING delta", "INSERT INTO {t} VALUES (1, 1), (3, 2)")
WITH_DROPPABLE = ("CREATE TABLE {t} (id BIGINT, p INT) USING delta PARTITIONED BY (p) "
                  "TBLPROPERTIES ('delta.feature.checkConstraints' = 'supported')",
                  "INSERT INTO {t} VALUES (1, 1), (3, 2)")


@dataclass
class Case:
    rule: str                      # the ConflictChecker / TransactionHelper rule it shows
    setup: tuple[str, ...]
    winner: Callable[[Any, str], None]
    loser: Loser
    expected: str | None           # Delta Spark's outcome, from its documented behaviour


INSERT_P1 = sql("INSERT INTO {t} VALUES (10, 1)")
INSERT_P2 = sql("INSERT INTO {t} VALUES (20, 2)")

CASES = {
    "append_into_read_partition": Case(
        "checkForAddedFilesThatShouldHaveBeenReadByCurrentTxn: Serializable counts blind appends",
        PARTITIONED, INSERT_P1, Loser(reads=1, add_in=1), "ConcurrentAppendException"),
    "append_into_other_partition": Case(
        "checkForAddedFilesThatShouldHaveBeenReadByCurrentTxn: partition predicate does not match",
        PARTITIONED, INSERT_P2, Loser(reads=1, add_in=1), None),
    "append_vs_blind_append": Case(
        "getFirstFileMatchingPartitionPredicates: a blind append read nothing",
        PARTITIONED, INSERT_P1, Loser(add_in=1), None),
    "append_vs_whole_table_read": Case(
        "checkForAddedFilesThatShouldHaveBeenReadByCurrentTxn: whole-table read matches any file",
        PARTITIONED, INSERT_P2, Loser(reads="all", add_in=1), "ConcurrentAppendException"),
    "append_unpartitioned_vs_remove": Case(
        "getFirstFileMatchingPartitionPredicates: unpartitioned table, not a blind append",
        UNPARTITIONED, INSERT_P1, Loser(remove_in=None), "ConcurrentAppendException"),
    "delete_of_read_file": Case(
        "checkForDeletedFilesAgainstCurrentTxnReadFiles",
        PARTITIONED, sql("DELETE FROM {t} WHERE p = 1"), Loser(reads=1, add_in=2),
        "ConcurrentDeleteReadException"),
    "delete_of_removed_file": Case(
        "checkForDeletedFilesAgainstCurrentTxnDeletedFiles",
        PARTITIONED, sql("DELETE FROM {t} WHERE p = 1"), Loser(remove_in=1), "ConcurrentDeleteDeleteException"),
    "delete_elsewhere": Case(
        "checkForDeletedFiles*: other files removed",
        PARTITIONED, sql("DELETE FROM {t} WHERE p = 2"), Loser(reads=1, remove_in=1), None),
    "optimize_vs_reader_of_partition": Case(
        "checkForAddedFiles...: a winner's dataChange=false adds count (not a blind append)",
        PARTITIONED, sql("OPTIMIZE {t} WHERE p = 1"), Loser(reads=1, add_in=1), "ConcurrentAppendException"),
    "rearrange_vs_append": Case(
        "canDowngradeToSnapshotIsolation: only dataChange=false file actions",
        PARTITIONED, INSERT_P1, Loser(reads=1, remove_in=1, add_in=1, data_change=False), None),
    "rearrange_with_metadata_vs_append": Case(
        "canDowngradeToSnapshotIsolation: a metaData action prevents the downgrade",
        PARTITIONED, INSERT_P1,
        Loser(reads=1, remove_in=1, add_in=1, data_change=False, properties={"layout": "v2"}),
        "ConcurrentAppendException"),
    "property_change_vs_blind_append": Case(
        "attemptToResolveMetadataConflicts: property not on the allow list",
        PARTITIONED, sql("ALTER TABLE {t} SET TBLPROPERTIES ('team' = 'x')"), Loser(add_in=1),
        "MetadataChangedException"),
    "schema_change_vs_blind_append": Case(
        "attemptToResolveMetadataConflicts: schema change",
        PARTITIONED, sql("ALTER TABLE {t} ADD COLUMNS (extra STRING)"), Loser(add_in=1),
        "MetadataChangedException"),
    "both_change_metadata": Case(
        "attemptToResolveMetadataConflicts: both change metadata",
        PARTITIONED, sql("ALTER TABLE {t} SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"),
        Loser(add_in=1, properties={"mine": "1"}), "MetadataChangedException"),
    "dv_enablement_vs_blind_append": Case(
        "attemptToResolveMetadataConflicts: enabling deletion vectors is on the allow list",
        PARTITIONED, sql("ALTER TABLE {t} SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"),
        Loser(add_in=1), None),
    "ict_enablement_vs_blind_append": Case(
        "attemptToResolveMetadataConflicts + resolveTimestampOrderingConflicts: enabling ICT",
        PARTITIONED, sql("ALTER TABLE {t} SET TBLPROPERTIES ('delta.enableInCommitTimestamps' = 'true')"),
        Loser(add_in=1), None),
    "column_mapping_enablement_vs_blind_append": Case(
        "attemptToResolveMetadataConflicts: enabling column mapping name mode is on the allow list",
        PARTITIONED, sql("ALTER TABLE {t} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
                         "'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')"),
        Loser(add_in=1), None),
    "txn_app_id": Case(
        "checkForUpdatedApplicationTransactionIdsThatCurrentTxnDependsOn",
        PARTITIONED, spark_txn_write("app-1", 1), Loser(app_id="app-1", add_in=1),
        "ConcurrentTransactionException"),
    "txn_other_app_id": Case(
        "checkForUpdatedApplicationTransactionIdsThatCurrentTxnDependsOn: other app id",
        PARTITIONED, spark_txn_write("app-2", 1), Loser(app_id="app-1", add_in=1), None),
    "protocol_change_both": Case(
        "checkProtocolCompatibility: both change the protocol",
        PARTITIONED, sql("ALTER TABLE {t} SET TBLPROPERTIES ('delta.feature.domainMetadata' = 'supported')"),
        Loser(add_in=1, protocol=Protocol(1, 7, None, ("appendOnly", "invariants", "checkConstraints"))),
        "ProtocolChangedException"),
    "feature_drop": Case(
        "checkProtocolCompatibility: the winner drops a feature",
        WITH_DROPPABLE, sql("ALTER TABLE {t} DROP FEATURE checkConstraints"), Loser(add_in=1),
        "ProtocolChangedException"),
    "column_mapping_predicate": Case(
        "getFirstFileMatchingPartitionPredicates on physical partition names (column mapping)",
        MAPPED, INSERT_P1, Loser(reads=1, add_in=1), "ConcurrentAppendException"),
    "column_mapping_other_partition": Case(
        "getFirstFileMatchingPartitionPredicates on physical partition names (column mapping)",
        MAPPED, INSERT_P2, Loser(reads=1, add_in=1), None),
    # our writer as the winner: Delta Spark judges our commits as it judges its own
    "our_blind_append_vs_reader": Case(
        "our commitInfo.isBlindAppend as Delta Spark reads it (Serializable counts it)",
        PARTITIONED, our_append(1), Loser(reads=1, add_in=1), "ConcurrentAppendException"),
    "our_property_change": Case(
        "our metaData action vs a blind append",
        PARTITIONED, our_properties({"team": "y"}), Loser(add_in=1), "MetadataChangedException"),
}


def _rows_spark(spark, path: str) -> list[tuple]:
    return sorted((r["id"], r["p"]) for r in spark.read.format("delta").load(path).select("id", "p").collect())


def _rows_ours(path: str) -> list[tuple]:
    t = DeltaTable(path).snapshot().to_pyarrow(columns=["id", "p"])
    return sorted(zip(t.column("id").to_pylist(), t.column("p").to_pylist()))


def _rows_deltalake(path: str) -> list[tuple]:
    """deltalake's rows through its query engine (its pyarrow dataset path reads neither deletion
    vectors nor column-mapped files)."""
    t = pa.table(deltalake.QueryBuilder().register("t", deltalake.DeltaTable(path)).execute("select id, p from t")
                 .read_all())
    return sorted(zip(t.column("id").to_pylist(), t.column("p").to_pylist()))


@pytest.fixture(scope="module")
def built(spark, tmp_path_factory) -> Callable[[tuple[str, ...], str], None]:
    """``built(setup, path)`` puts at ``path`` a copy of the table Delta Spark builds with ``setup``.

    Each setup is run once per module (building is most of a case's time); every test gets its own
    copies, so no test sees another's commits.
    """
    root = tmp_path_factory.mktemp("conflict_tables")
    tables: dict[tuple[str, ...], str] = {}

    def copy(setup: tuple[str, ...], path: str) -> None:
        if setup not in tables:
            tables[setup] = str(root / f"table{len(tables)}")
            for s in setup:
                spark.sql(s.format(t=f"delta.`{tables[setup]}`"))
        shutil.copytree(tables[setup], path)
    return copy


@pytest.mark.parametrize("name", list(CASES))
def test_we_conflict_exactly_when_delta_spark_does(spark, built, tmp_path, name):
    case = CASES[name]
    theirs, ours = str(tmp_path / "spark_loser"), str(tmp_path / "our_loser")
    built(case.setup, theirs)
    shutil.copytree(theirs, ours)

    spark_commit = open_spark_loser(spark, theirs, case.loser, plan_actions(theirs, case.loser))
    our_commit = open_our_loser(ours, case.loser, plan_actions(ours, case.loser))
    case.winner(spark, theirs)
    case.winner(spark, ours)
    spark_outcome, our_outcome = spark_commit(), our_commit()

    assert spark_outcome == case.expected, f"{case.rule}: Delta Spark gave {spark_outcome}"
    assert our_outcome == spark_outcome, f"{case.rule}: Delta Spark gave {spark_outcome}, we gave {our_outcome}"
    rows = {}
    for path in (theirs, ours):
        rows[path] = _rows_spark(spark, path)
        assert _rows_ours(path) == rows[path]
        assert _rows_deltalake(path) == rows[path]
    # the same rows on both copies: the losers did the same thing
    assert rows[theirs] == rows[ours]


def test_after_ict_enablement_our_resolved_commit_carries_an_in_commit_timestamp(spark, built, tmp_path):
    """resolveTimestampOrderingConflicts: a commit rebased over the ICT enablement gets an ICT
    strictly after the winner's."""
    path = str(tmp_path / "t")
    built(PARTITIONED, path)
    loser = Loser(add_in=1)
    commit = open_our_loser(path, loser, plan_actions(path, loser))
    CASES["ict_enablement_vs_blind_append"].winner(spark, path)
    assert commit() is None
    table = DeltaTable(path)
    latest = table.latest_version()
    infos = [json.loads(line)["commitInfo"] for v in (latest - 1, latest)
             for line in open(os.path.join(path, "_delta_log", f"{v:020d}.json")) if "commitInfo" in line]
    assert infos[1]["inCommitTimestamp"] > infos[0]["inCommitTimestamp"]
    assert table.snapshot().timestamp == infos[1]["inCommitTimestamp"]
    assert int(spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()[0]["version"]) == latest


def test_isolation_level_property_may_only_be_set_to_serializable(spark, built, tmp_path):
    """DeltaConfigs.ISOLATION_LEVEL's validation: Delta Spark and we refuse WriteSerializable; both
    accept Serializable in any case."""
    path = str(tmp_path / "t")
    built(PARTITIONED, path)
    with pytest.raises(Exception, match="(?i)isolation"):
        spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.isolationLevel' = 'WriteSerializable')")
    table = DeltaTable(path)
    before = table.latest_version()
    with pytest.raises(InvalidArgumentError, match="must be Serializable"):
        with table.transaction(operation="SET TBLPROPERTIES") as txn:
            txn.set_properties({"delta.isolationLevel": "WriteSerializable"})
    assert table.latest_version() == before
    with table.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.isolationLevel": "serializable"})
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (7, 1)")     # Delta Spark accepts what we set
    assert _rows_ours(path) == _rows_spark(spark, path)
