"""Break review s9 of the late s8 Airflow fixes: findings as strict xfails (real tables, the operators'
execute with the suite's recording task instance)."""
from __future__ import annotations

import pytest

from airflow_provider_delta.log import DeltaTable, TableAlreadyExistsError


def test_a_retried_clone_of_another_source_is_not_taken_for_its_own(make_table, make_context, tmp_path):
    """The retry check compared the task instance and the source version, not the source: a retry whose
    source_uri rendered to another table reported the first try's clone of table a as its clone of b."""
    from airflow_provider_delta.operators import DeltaCloneOperator
    a = make_table("a", commits=1)
    b = make_table("b", commits=1)
    target = str(tmp_path / "clone")
    DeltaCloneOperator(task_id="clone", source_uri=a.storage.root, table_uri=target).execute(make_context("clone"))
    retry = make_context("clone")
    retry["ti"].try_number = 2
    with pytest.raises(TableAlreadyExistsError):
        DeltaCloneOperator(task_id="clone", source_uri=b.storage.root, table_uri=target, version="1").execute(retry)


def test_a_retried_clone_at_a_timestamp_of_another_version_is_not_taken_for_its_own(make_table, make_context,
                                                                                     tmp_path):
    """With a timestamp the source version was not compared at all: the retry asking for the version at
    its timestamp (2) took the first try's clone of version 1 for its own."""
    from airflow_provider_delta.operators import DeltaCloneOperator
    src = make_table("a", commits=2)
    t1, t2 = src.snapshot(version=1).timestamp, src.snapshot(version=2).timestamp
    target = str(tmp_path / "clone")
    DeltaCloneOperator(task_id="clone", source_uri=src.storage.root, table_uri=target, timestamp=t1).execute(
        make_context("clone"))
    assert DeltaTable(target).history()[0]["operationParameters"]["sourceVersion"] in (1, "1")
    retry = make_context("clone")
    retry["ti"].try_number = 2
    with pytest.raises(TableAlreadyExistsError):
        DeltaCloneOperator(task_id="clone", source_uri=src.storage.root, table_uri=target, timestamp=t2).execute(retry)


def test_a_retried_rollback_to_a_timestamp_of_another_version_is_refused(make_table, make_context):
    """Like the clone: with a timestamp the restored version was not compared, so a retry asking for the
    version at its timestamp (2) took the first try's RESTORE of version 1 for its own and reported it."""
    from airflow_provider_delta.operators import DeltaRestoreOperator
    from airflow_provider_delta.operators.restore import DeltaRollbackRefusedError
    table = make_table("a", commits=3)
    t1, t2 = table.snapshot(version=1).timestamp, table.snapshot(version=2).timestamp
    DeltaRestoreOperator(task_id="rollback", table_uri=table.storage.root, timestamp=t1,
                         expected_version=3).execute(make_context("rollback"))
    assert DeltaTable(table.uri).latest_version() == 4
    retry = make_context("rollback")
    retry["ti"].try_number = 2
    with pytest.raises(DeltaRollbackRefusedError):
        DeltaRestoreOperator(task_id="rollback", table_uri=table.storage.root, timestamp=t2,
                             expected_version=3).execute(retry)
    assert DeltaTable(table.uri).latest_version() == 4


def test_a_retried_rollback_to_a_timestamp_whose_restore_landed_succeeds(make_table, make_context):
    """The retry fix (06439fe) for a guarded rollback whose RESTORE landed before its worker died: with a
    timestamp instead of a version the commit records no version, so the retry was refused forever."""
    from airflow_provider_delta.operators import DeltaRestoreOperator
    table = make_table("a", commits=3)
    t1 = table.snapshot(version=1).timestamp
    DeltaRestoreOperator(task_id="rollback", table_uri=table.storage.root, timestamp=t1,
                         expected_version=3).execute(make_context("rollback"))
    retry = make_context("rollback")
    retry["ti"].try_number = 2
    out = DeltaRestoreOperator(task_id="rollback", table_uri=table.storage.root, timestamp=t1,
                               expected_version=3).execute(retry)
    assert out["version"] == 4 and out["restored_version"] == 1 and out["committed"] is True
    assert DeltaTable(table.uri).latest_version() == 4
