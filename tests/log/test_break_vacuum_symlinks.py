"""Breaker findings: vacuum deletes a live file when a symlink stands between the log's path and the root.

Our reader opens these files (the table reads 4 rows), yet vacuum lists them as unreferenced.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from live_link_tables import AGE_SECONDS, table_with_a_live_link

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.maintenance.vacuum import vacuum


def _table_with_add(tmp_path: Path, log_path_of) -> tuple[Path, Path]:
    """The table ``real/t`` and a link to it outside (``link``); version 1 adds ``live.parquet`` as
    ``log_path_of(real, link)`` names it."""
    real, link = tmp_path / "real" / "t", tmp_path / "link"
    live = table_with_a_live_link(real, log_path_of(real, link), lambda root, _target: link.symlink_to(root),
                                  target="live.parquet")
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
    def links(root: Path, target: Path) -> None:
        (root / "ln").symlink_to(root / "realdir")
        if orphan:
            (root / "realdir" / "orphan.parquet").write_bytes(target.read_bytes())
    real = tmp_path / "t"
    return real, table_with_a_live_link(real, "ln/x.parquet", links)


def test_vacuum_keeps_a_live_file_named_through_a_symlinked_directory_inside_the_table(tmp_path):
    real, _live = _linked_table(tmp_path)
    table = DeltaTable(str(real))
    assert table.snapshot().to_pyarrow().num_rows == 4
    assert "realdir/x.parquet" not in vacuum(table, dry_run=True)["files_deleted"]


def test_vacuum_deletes_a_symlink_to_a_directory_that_live_paths_go_through(tmp_path):
    real, _live = _linked_table(tmp_path)
    os.utime(real / "ln", (time.time() - AGE_SECONDS,) * 2, follow_symlinks=False)
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
