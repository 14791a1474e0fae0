"""Final docs review (session 10): code findings met while checking the documentation against the code."""
from __future__ import annotations

import os

import pytest

from airflow_provider_delta.log import CommitOutcomeUnknownError
from built_on_store import BuiltOnAtOnce, idle_table
from test_break_s9 import _log_dir


def test_the_undecided_tie_is_a_typed_error_for_a_table_path_with_braces(tmp_path):
    t = idle_table(str(tmp_path / "t{day}"))
    t.storage.files = BuiltOnAtOnce(t.storage.files, t.uri)
    with pytest.raises(CommitOutcomeUnknownError, match="left in place"):
        with t.transaction(operation="SET TBLPROPERTIES") as txn:
            txn.set_metadata(txn.snapshot.metadata.with_configuration({"delta.appendOnly": "false"}))
    assert os.path.exists(os.path.join(_log_dir(t), f"{3:020d}.json"))   # the commit file stays
