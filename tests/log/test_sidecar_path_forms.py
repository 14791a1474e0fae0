"""Sidecars named percent-encoded or by absolute URI: cleanup keeps them, readers and the parallel checkpoint writer find them.

Sidecar paths are percent-encoded and relative to ``_delta_log/_sidecars``, or absolute
URIs (PROTOCOL.md "Sidecar File Information"). A sidecar named ``a%20b.parquet`` is the
file ``a b.parquet``; one named by ``file:/<root>/_delta_log/_sidecars/x.parquet`` is
``x.parquet``. Cleanup compared raw names, so it would have deleted both while a
checkpoint still needed them; the reader could not open them either.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import quote

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.maintenance.checkpoint import write_checkpoint
from airflow_provider_delta.log.maintenance.cleanup import cleanup_metadata
from airflow_provider_delta.log.maintenance.distributed_checkpoint import plan_checkpoint

LOG = "_delta_log"
DAY = 86_400_000
NOW = 1_781_524_800_000


def _touch(path: Path, ms: int) -> None:
    os.utime(path, (ms / 1000, ms / 1000))


def _odd_sidecar_names(copy_table) -> tuple[Path, Path, Path, list[str]]:
    """A v2 table whose newest checkpoint (JSON, version 5) names one sidecar percent-encoded
    (``a%20b.parquet``) and one by absolute ``file:`` URI; classic checkpoints at 2 and 4.
    Returns (table, the two sidecars, the live files)."""
    path = copy_table("delta-golden/v2-checkpoint-parquet")
    sidecar_dir = path / LOG / "_sidecars"
    golden = sorted(p for p in sidecar_dir.iterdir() if not p.name.startswith("."))
    spaced = sidecar_dir / "a b.parquet"
    golden[0].rename(spaced)
    absolute = golden[1]
    for v in (3, 4, 5):
        (path / LOG / f"{v:020d}.json").write_text(json.dumps({"commitInfo": {"timestamp": v, "operation": "X"}}) + "\n")
    # version 2's own v2 checkpoint named the old sidecar names: drop it, checkpoint classically at 2 and 4
    for f in (path / LOG).glob(f"{2:020d}.checkpoint.*.parquet"):
        f.unlink()
    write_checkpoint(DeltaTable(str(path)), 2, v2=False)
    write_checkpoint(DeltaTable(str(path)), 4, v2=False)
    files_expected = sorted(DeltaTable(str(path)).snapshot(version=4).files().column("path").to_pylist())
    manifest = path / LOG / f"{5:020d}.checkpoint.00000000-0000-0000-0000-000000000005.json"
    snap4 = DeltaTable(str(path)).snapshot(version=4)
    lines = [{"checkpointMetadata": {"version": 5}}, {"protocol": snap4.protocol.to_json()},
             {"metaData": snap4.metadata.to_json()}]
    for log_path, f in ((quote(spaced.name), spaced), ("file:" + quote(str(absolute)), absolute)):
        lines.append({"sidecar": {"path": log_path, "sizeInBytes": f.stat().st_size, "modificationTime": 1}})
    manifest.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    (path / LOG / "_last_checkpoint").unlink()
    return path, spaced, absolute, files_expected


def test_sidecars_named_encoded_or_absolute_are_kept_while_a_checkpoint_names_them(copy_table):
    path, spaced, absolute, files_expected = _odd_sidecar_names(copy_table)
    assert sorted(DeltaTable(str(path)).snapshot().files().column("path").to_pylist()) == files_expected
    for d, _dirs, files in os.walk(path / LOG):
        for name in files:
            v = int(name.lstrip(".")[:20]) if name.lstrip(".")[:20].isdigit() else 0
            _touch(Path(d) / name, NOW - (60 - v) * DAY if v < 5 else NOW)
    _touch(spaced, NOW - 60 * DAY)
    _touch(absolute, NOW - 60 * DAY)
    r = cleanup_metadata(DeltaTable(str(path)), now_ms=NOW)
    assert r["checkpoint_version"] == 4 and r["checkpoints"], r
    assert spaced.exists() and absolute.exists(), r["sidecars"]
    assert sorted(DeltaTable(str(path)).snapshot().files().column("path").to_pylist()) == files_expected


def test_a_distributed_checkpoint_reads_sidecars_named_encoded_or_absolute(copy_table):
    """The parallel checkpoint writer starts from that checkpoint and finds both sidecars."""
    path, _spaced, _absolute, files_expected = _odd_sidecar_names(copy_table)
    (path / LOG / f"{6:020d}.json").write_text(json.dumps({"commitInfo": {"timestamp": 6, "operation": "X"}}) + "\n")
    plan = plan_checkpoint(DeltaTable(str(path)), version=6)
    assert plan.checkpoint_version == 5
    by_part: dict[int, list] = {}
    for index, source in enumerate(plan.sources):
        for part, item in plan.read_source(index, source):
            by_part.setdefault(part, []).append(item)
    staged = [plan.stage_part(part, items) for part, items in sorted(by_part.items())]
    plan.publish(DeltaTable(str(path)), staged)
    snap = DeltaTable(str(path)).snapshot()
    assert snap.segment.checkpoint_version == 6
    assert sorted(snap.files().column("path").to_pylist()) == files_expected
