"""Final docs review (session 10): code findings met while checking the documentation against the code."""
from __future__ import annotations

import os
import time

import pytest

from airflow_provider_delta.log import CommitOutcomeUnknownError, DeltaTable
from built_on_store import DAY_S, BuiltOnAtOnce
from test_break_s9 import SCHEMA, _log_dir

import pyarrow as pa


def test_the_undecided_tie_is_a_typed_error_for_a_table_path_with_braces(tmp_path):
    t = DeltaTable.create(str(tmp_path / "t{day}"), SCHEMA)
    t.auto_checkpoint = False
    t.write(pa.table({"id": [1]}))
    t.write(pa.table({"id": [2]}))
    t.checkpoint(2)
    old = time.time() - 40 * DAY_S
    for name in os.listdir(_log_dir(t)):
        os.utime(os.path.join(_log_dir(t), name), (old, old))
    t.storage.files = BuiltOnAtOnce(t.storage.files, t.uri)
    with pytest.raises(CommitOutcomeUnknownError, match="left in place"):
        with t.transaction(operation="SET TBLPROPERTIES") as txn:
            txn.set_metadata(txn.snapshot.metadata.with_configuration({"delta.appendOnly": "false"}))
    assert os.path.exists(os.path.join(_log_dir(t), f"{3:020d}.json"))   # the commit file stays
