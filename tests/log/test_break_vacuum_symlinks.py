"""Breaker findings: vacuum deletes a live file when a symlink stands between the log's path and the root.

Our reader opens these files (the table reads 4 rows), yet vacuum lists them as unreferenced.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.maintenance.vacuum import vacuum


def _age(root: Path) -> None:
    old = time.time() - 30 * 86_400
    for d, _dirs, files in os.walk(root):
        for f in files:
            os.utime(Path(d) / f, (old, old), follow_symlinks=False)


def _table_with_add(tmp_path: Path, log_path_of) -> tuple[Path, Path]:
    real = tmp_path / "real" / "t"
    write_deltalake(str(real), pa.table({"x": [1, 2]}))
    src = next(real.glob("*.parquet"))
    link = tmp_path / "link"
    link.symlink_to(real)
    live = real / "live.parquet"
    live.write_bytes(src.read_bytes())
    add = {"add": {"path": log_path_of(real, link), "partitionValues": {}, "size": live.stat().st_size,
                   "modificationTime": 1, "dataChange": True}}
    info = {"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "WRITE"}}
    (real / "_delta_log" / f"{1:020d}.json").write_text(json.dumps(info) + "\n" + json.dumps(add) + "\n")
    _age(real)
    return live, link


@pytest.mark.parametrize("opened_at, named_by", [
    ("link", lambda real, link: "file:" + str(real / "live.parquet")),   # root opened through a symlink
    ("real", lambda real, link: "file:" + str(link / "live.parquet")),   # the add names the root's symlink
])
def test_vacuum_deletes_a_live_file_whose_absolute_path_differs_from_the_root_by_a_symlink(
        tmp_path, opened_at, named_by):
    live, link = _table_with_add(tmp_path, named_by)
    root = str(link) if opened_at == "link" else str(live.parent)
    table = DeltaTable(root)
    assert table.snapshot().to_pyarrow().num_rows == 4            # the reader opens the live file
    result = vacuum(table, dry_run=True)
    assert "live.parquet" not in result["files_deleted"]


def _linked_table(tmp_path: Path, orphan: bool = False) -> tuple[Path, Path]:
    """A table whose version 1 adds ``ln/x.parquet`` through the in-table link ``ln -> realdir``
    (and, with ``orphan``, an unreferenced ``realdir/orphan.parquet``), every file 30 days old."""
    real = tmp_path / "t"
    write_deltalake(str(real), pa.table({"x": [1, 2]}))
    src = next(real.glob("*.parquet"))
    (real / "realdir").mkdir()
    (real / "ln").symlink_to(real / "realdir")
    live = real / "realdir" / "x.parquet"
    live.write_bytes(src.read_bytes())
    if orphan:
        (real / "realdir" / "orphan.parquet").write_bytes(src.read_bytes())
    add = {"add": {"path": "ln/x.parquet", "partitionValues": {}, "size": live.stat().st_size,
                   "modificationTime": 1, "dataChange": True}}
    info = {"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "WRITE"}}
    (real / "_delta_log" / f"{1:020d}.json").write_text(json.dumps(info) + "\n" + json.dumps(add) + "\n")
    _age(real)
    return real, live


def test_vacuum_keeps_a_live_file_named_through_a_symlinked_directory_inside_the_table(tmp_path):
    real, _live = _linked_table(tmp_path)
    table = DeltaTable(str(real))
    assert table.snapshot().to_pyarrow().num_rows == 4
    assert "realdir/x.parquet" not in vacuum(table, dry_run=True)["files_deleted"]


def test_vacuum_deletes_a_symlink_to_a_directory_that_live_paths_go_through(tmp_path):
    real = tmp_path / "t"
    write_deltalake(str(real), pa.table({"x": [1, 2]}))
    src = next(real.glob("*.parquet"))
    (real / "realdir").mkdir()
    (real / "realdir" / "x.parquet").write_bytes(src.read_bytes())
    (real / "ln").symlink_to(real / "realdir")
    add = {"add": {"path": "ln/x.parquet", "partitionValues": {}, "size": 5, "modificationTime": 1,
                   "dataChange": True}}
    info = {"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "WRITE"}}
    (real / "_delta_log" / f"{1:020d}.json").write_text(json.dumps(info) + "\n" + json.dumps(add) + "\n")
    _age(real)
    os.utime(real / "ln", (time.time() - 30 * 86_400,) * 2, follow_symlinks=False)
    table = DeltaTable(str(real))
    assert table.snapshot().to_pyarrow().num_rows == 4
    assert "ln" not in vacuum(table, dry_run=True)["files_deleted"]


def test_vacuum_run_keeps_the_file_behind_the_link_and_still_deletes_an_unreferenced_neighbour(tmp_path):
    """Not a dry run: the live file behind ``ln -> realdir`` stays (the table still reads), an
    unreferenced old file in the same directory goes."""
    real, live = _linked_table(tmp_path, orphan=True)
    result = vacuum(DeltaTable(str(real)), dry_run=False)
    assert result["files_deleted"] == ["realdir/orphan.parquet"]
    assert live.exists() and not (real / "realdir" / "orphan.parquet").exists()
    assert DeltaTable(str(real)).snapshot().to_pyarrow().num_rows == 4
