"""DeltaRestoreOperator and DeltaCloneOperator through execute(context) on real tables."""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

from airflow_provider_delta.assets import to_asset
from airflow_provider_delta.log import (DataFileNotFoundError, DeltaTable, InvalidArgumentError,
                                        TableAlreadyExistsError)
from airflow_provider_delta.operators import DeltaCloneOperator, DeltaRestoreOperator


def ids(table: DeltaTable) -> list[int]:
    return sorted(DeltaTable(table.uri).snapshot().to_pyarrow().column("id").to_pylist())


def test_restore_rolls_back_and_reports_bounded_metrics(make_table, make_context):
    table = make_table(commits=2)                                          # v0, v1, v2
    asset = to_asset(table_uri=table.storage.root)
    ctx = make_context("rollback")
    op = DeltaRestoreOperator(task_id="rollback", table_uri=table.storage.root, version="1", outlets=[asset])
    out = op.execute(ctx)
    assert out["version"] == 3 and out["restored_version"] == 1 and out["committed"] is True
    assert set(out["metrics"]) == {"numRestoredFiles", "restoredFilesSize", "numRemovedFiles", "removedFilesSize",
                                   "numOfFilesAfterRestore", "tableSizeAfterRestore"}
    assert out["metrics"]["numRemovedFiles"] == 2 and all(isinstance(v, int) for v in out["metrics"].values())
    json.dumps(out)                                                        # an XCom
    assert ids(table) == [0, 1]
    assert ctx["outlet_events"][asset].extra == {"version": 3, "committed": True, "operation": "RESTORE",
                                                  "restored_version": 1}
    entry = DeltaTable(table.uri).history(1)[0]
    assert entry["operation"] == "RESTORE" and entry["job"]["task_id"] == "rollback"
    (written,) = op.get_openlineage_facets_on_complete(None).outputs
    assert written.facets["version"].datasetVersion == "3"


def test_restore_to_the_latest_version_commits_and_announces_nothing(make_table, make_context):
    table = make_table(commits=1)
    asset = to_asset(table_uri=table.storage.root)
    ctx = make_context("rollback")
    op = DeltaRestoreOperator(task_id="rollback", table_uri=table.storage.root, version="{{ v }}", outlets=[asset])
    op.render_template_fields({"v": 1})
    out = op.execute(ctx)
    assert (out["version"], out["committed"]) == (1, False)
    assert op.outlets == [] and ctx["outlet_events"][asset].extra == {}
    assert DeltaTable(table.uri).latest_version() == 1


def test_restore_by_timestamp_and_bad_input(make_table, make_context):
    table = make_table(commits=2)
    ts = table.snapshot(version=1).timestamp
    out = DeltaRestoreOperator(task_id="r", table_uri=table.storage.root, timestamp=str(ts)).execute(make_context())
    assert out["restored_version"] == 1 and ids(table) == [0, 1]
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        DeltaRestoreOperator(task_id="r", table_uri=table.storage.root, version="None").execute(make_context())
    table.vacuum(retention_hours=0, enforce_retention=False, dry_run=False)
    before = DeltaTable(table.uri).latest_version()
    with pytest.raises(DataFileNotFoundError):
        DeltaRestoreOperator(task_id="r", table_uri=table.storage.root, version=2).execute(make_context())
    assert DeltaTable(table.uri).latest_version() == before


def test_clone_creates_the_clone_with_its_asset_event_and_lineage(make_table, make_context, tmp_path):
    source = make_table(commits=2)
    target = str(tmp_path / "test_copy")
    asset = to_asset(table_uri=target)
    ctx = make_context("clone")
    op = DeltaCloneOperator(task_id="clone", source_uri=source.storage.root, table_uri=target, version="1",
                            outlets=[asset])
    out = op.execute(ctx)
    assert out["version"] == 0 and out["source_version"] == 1
    assert out["metrics"]["sourceNumOfFiles"] == 2 and out["metrics"]["numCopiedFiles"] == 0
    json.dumps(out)
    clone = DeltaTable(target)
    assert ids(clone) == [0, 1] and clone.history()[0]["job"]["task_id"] == "clone"
    assert ctx["outlet_events"][asset].extra == {"version": 0, "committed": True, "operation": "CLONE",
                                                  "source_uri": source.uri, "source_version": 1}
    lineage = op.get_openlineage_facets_on_complete(None)
    assert [(d.name, d.facets["version"].datasetVersion) for d in lineage.inputs] == [(source.storage.root, "1")]
    assert [(d.name, d.facets["version"].datasetVersion) for d in lineage.outputs] == [(clone.storage.root, "0")]
    with pytest.raises(TableAlreadyExistsError):
        DeltaCloneOperator(task_id="clone", source_uri=source.storage.root, table_uri=target).execute(make_context())
    assert os.listdir(os.path.join(target, "_delta_log")) == ["00000000000000000000.json"]


def test_every_new_operator_templates_its_arguments():
    assert set(DeltaRestoreOperator.template_fields) >= {"table_uri", "delta_conn_id", "version", "timestamp"}
    assert set(DeltaCloneOperator.template_fields) >= {"table_uri", "source_uri", "version", "timestamp"}


def test_clone_then_restore_of_the_clone_leaves_the_source_alone(make_table, make_context, tmp_path):
    source = make_table(commits=2)
    target = str(tmp_path / "copy")
    DeltaCloneOperator(task_id="c", source_uri=source.storage.root, table_uri=target).execute(make_context())
    DeltaTable(target).write(pa.table({"id": [99], "day": ["2026-02-01"]}))
    out = DeltaRestoreOperator(task_id="r", table_uri=target, version=0).execute(make_context())
    assert out["committed"] and ids(DeltaTable(target)) == ids(source) == [0, 1, 2, 3]
    assert DeltaTable(source.uri).latest_version() == 2
