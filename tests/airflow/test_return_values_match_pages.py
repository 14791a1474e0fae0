"""The XCom a how-to page promises ("What it returns") is what the operator returns: each page's
named keys against the keys of a real run on a real table (docs review, s9)."""
from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_provider_delta.operators import (DeltaBackfillOperator, DeltaCheckpointOperator, DeltaCloneOperator,
                                              DeltaMetadataCleanupOperator, DeltaOptimizeOperator,
                                              DeltaRestoreOperator, DeltaTimeTravelSnapshotOperator,
                                              DeltaVacuumOperator)

HOWTO = Path(__file__).resolve().parents[2] / "docs" / "howto"


def returns_paragraph(page: str) -> str:
    return (HOWTO / page).read_text().split("## What it returns", 1)[1].lstrip("\n").split("\n\n", 1)[0]


def promised_keys(page: str) -> set[str]:
    """The keys named in the page's "What it returns" paragraph: ``{"a", "b": 0}`` sets and the
    backquoted names around them (list keys of the bounded maintenance reports count by their name)."""
    text = returns_paragraph(page)
    keys = set(re.findall(r'"(\w+)"', text))
    keys |= {k for k in re.findall(r"`(\w+)`", text) if not k[0].isupper()}
    return keys


def _run(op, make_context):
    return op.execute(make_context(op.task_id))


@pytest.fixture
def table(make_table):
    return make_table(commits=3)


CASES = {
    "snapshot-operator.md": lambda t: DeltaTimeTravelSnapshotOperator(task_id="pin", table_uri=t.storage.root),
    "checkpoint-operator.md": lambda t: DeltaCheckpointOperator(task_id="cp", table_uri=t.storage.root, cleanup=True),
    "backfill-operator.md": lambda t: DeltaBackfillOperator(task_id="bf", table_uri=t.storage.root),
    "restore-operator.md": lambda t: DeltaRestoreOperator(task_id="rs", table_uri=t.storage.root, version=1),
    "clone-operator.md": lambda t: DeltaCloneOperator(task_id="cl", source_uri=t.storage.root,
                                                      table_uri=t.storage.root + "_clone"),
    "optimize-operator.md": lambda t: DeltaOptimizeOperator(task_id="opt", table_uri=t.storage.root),
}


@pytest.mark.parametrize("page", sorted(CASES))
def test_every_returned_key_is_on_the_page_and_back(page, table, make_context):
    result = _run(CASES[page](table), make_context)
    promised = promised_keys(page)
    if "{" in returns_paragraph(page):        # a page that writes the dict out: every key it names
        written = set(re.findall(r'"(\w+)"', returns_paragraph(page).split("}", 1)[0]))
        assert written <= set(result), f"{page}: promised but not returned: {sorted(written - set(result))}"
    assert set(result) <= promised | _UNLISTED.get(page, set()), (
        f"{page}: returned but not on the page: {sorted(set(result) - promised - _UNLISTED.get(page, set()))}")


#: keys a prose page describes in words rather than by name
_UNLISTED = {"optimize-operator.md": {"operation", "numFilesAdded", "numFilesRemoved", "filesAdded", "filesRemoved",
                                      "partitionsOptimized", "numBins", "totalConsideredFiles", "totalFilesSkipped",
                                      "numDeletionVectorsRemoved", "numDeletionVectorRowsRemoved", "zOrderBy",
                                      "readVersion"}}


@pytest.mark.parametrize("cls", [DeltaMetadataCleanupOperator, DeltaVacuumOperator])
def test_maintenance_reports_are_bounded_as_the_pages_say(cls, table, make_context):
    page = {DeltaMetadataCleanupOperator: "metadata-cleanup-operator.md", DeltaVacuumOperator: "vacuum-operator.md"}[cls]
    result = _run(cls(task_id="m", table_uri=table.storage.root), make_context)
    lists = [k for k, v in result.items() if isinstance(v, list)]
    assert lists, result
    for key in lists:          # "each of its lists kept to its first 20 entries, with <list>_count and <list>_truncated"
        assert f"{key}_count" in result and f"{key}_truncated" in result, (page, key)
    promised = promised_keys(page) - {"list", "committed", "maintenance", "deleted_files"}
    named_lists = {k for k in promised if not k.startswith("<")} & {"deleted", "commits", "checkpoints", "files_deleted"}
    assert named_lists <= set(result), (page, named_lists - set(result))
