"""The commit owners of managed commits, in one process: in-memory, SQLite file and PostgreSQL.

Every behaviour is checked against all three owners through the same public API,
on real files in tmp_path and real databases, with a fresh table id per test so
tests sharing the PostgreSQL database cannot see each other. Concurrency across
processes lives in test_commit_owner_processes.py.
"""
from __future__ import annotations

import json
import pickle
import uuid

import pytest
import sqlalchemy as sa

from airflow_provider_delta.log.base.commit_owner import (
    Commit, CommitOwner, GetCommitsResponse, InMemoryCommitOwner, SqlCommitOwner, owner_from_conf)
from airflow_provider_delta.log.base.commit_owner.conf import check_owner_conf, parse_owner_conf
from airflow_provider_delta.log.base.errors import (
    CommitFailedError, CorruptLogError, InvalidArgumentError, InvalidTableStateError, StorageError,
    UnsupportedFeatureError)
from airflow_provider_delta.log.base.names import COMMITS_DIR, commit_path, parse_uuid_commit_name
from airflow_provider_delta.log.base.storage import Storage


# --------------------------------------------------------------------- fixtures
def payload(tag: str, ts: int = 1_700_000_000_000) -> bytes:
    """A small but well-formed commit: commitInfo with ICT first, then one add."""
    return (json.dumps({"commitInfo": {"inCommitTimestamp": ts, "operation": "WRITE"}}) + "\n"
            + json.dumps({"add": {"path": f"part-{tag}.parquet", "partitionValues": {}, "size": 1,
                                  "modificationTime": ts, "dataChange": True}}) + "\n").encode()


def new_table(tmp_path, owner: CommitOwner, name: str = "t") -> tuple[Storage, str]:
    """A table directory whose version 0 is in _delta_log, registered with ``owner``."""
    storage = Storage(str(tmp_path / name))
    assert storage.put_if_absent(commit_path(0), payload("v0"))
    table_id = str(uuid.uuid4())
    owner.register_table(table_id, storage.uri, 0)
    return storage, table_id


def backfilled(storage: Storage) -> list[int]:
    return sorted(int(f.name[:20]) for f in storage.list_dir("_delta_log") if f.name.endswith(".json"))


def commit_files(storage: Storage) -> list[str]:
    return sorted(f.name for f in storage.list_dir(COMMITS_DIR))


class FailingBackfillStorage(Storage):
    """Real storage whose writes into _delta_log fail, as during a storage outage."""

    def put_if_absent(self, rel, data):
        if rel.startswith("_delta_log/") and not rel.startswith(COMMITS_DIR):
            raise OSError("simulated outage writing " + rel)
        return super().put_if_absent(rel, data)


class RecordingStorage(Storage):
    """Real storage that remembers the order of put-if-absent calls."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.puts: list[str] = []

    def put_if_absent(self, rel, data):
        self.puts.append(rel)
        return super().put_if_absent(rel, data)


# ---------------------------------------------------------------- ratification
def test_commits_are_ratified_in_order_and_backfilled_at_once(make_owner, tmp_path):
    owner = make_owner(batch=1)
    storage, tid = new_table(tmp_path, owner)
    for v in range(1, 6):
        c = owner.commit(storage, tid, v, payload(f"v{v}"), 1000 + v)
        assert isinstance(c, Commit) and c.version == v and c.commit_timestamp == 1000 + v
        assert parse_uuid_commit_name(c.file_name)[0] == v
        assert c.file_size == len(payload(f"v{v}"))
        # batch size 1: backfilled right away, with exactly the committed bytes
        assert storage.read_bytes(commit_path(v)) == payload(f"v{v}")
        assert storage.read_bytes(c.rel_path) == payload(f"v{v}")
        resp = owner.get_commits(tid)
        assert resp == GetCommitsResponse([], v)
    assert backfilled(storage) == list(range(6))
    state = owner.describe_table(tid)
    assert (state.state, state.latest_version, state.backfilled_version) == ("active", 5, 5)


def test_taken_version_is_a_retryable_conflict_and_leaves_no_file(make_owner, tmp_path):
    owner = make_owner()
    storage, tid = new_table(tmp_path, owner)
    owner.commit(storage, tid, 1, payload("a"), 1)
    before = commit_files(storage)
    with pytest.raises(CommitFailedError) as ei:
        owner.commit(storage, tid, 1, payload("b"), 2)
    assert ei.value.retryable and ei.value.conflict and ei.value.version == 1
    assert commit_files(storage) == before
    assert storage.read_bytes(commit_path(1)) == payload("a")


def test_lost_race_after_writing_the_file_deletes_it(make_owner, tmp_path):
    """A proposer that saw a stale latest version writes its file, loses ratification,
    gets a retryable conflict, and its never-ratified file is removed."""
    owner = make_owner()
    storage, tid = new_table(tmp_path, owner)
    stale = owner.describe_table(tid)
    owner.commit(storage, tid, 1, payload("winner"), 1)
    before = commit_files(storage)
    real_read = owner._read_table
    owner._read_table = lambda table_id: stale  # what a racing proposer saw before the winner
    try:
        with pytest.raises(CommitFailedError) as ei:
            owner.commit(storage, tid, 1, payload("loser"), 2)
    finally:
        owner._read_table = real_read
    assert ei.value.retryable and ei.value.conflict and ei.value.version == 1
    assert commit_files(storage) == before
    assert storage.read_bytes(commit_path(1)) == payload("winner")
    assert owner.get_commits(tid).latest_table_version == 1


@pytest.mark.parametrize("case", ["unknown", "gap"])
def test_refused_commits_are_not_retryable_and_write_nothing(make_owner, tmp_path, case):
    owner = make_owner()
    storage, tid = new_table(tmp_path, owner)
    if case == "unknown":
        tid_used, version, words = str(uuid.uuid4()), 1, "does not know table"
    else:
        tid_used, version, words = tid, 3, "the next one is 1"
    with pytest.raises(CommitFailedError, match=words) as ei:
        owner.commit(storage, tid_used, version, payload("x"), 1)
    assert not ei.value.retryable and not ei.value.conflict
    assert commit_files(storage) == []
    assert backfilled(storage) == [0]


@pytest.mark.parametrize("bad", [
    dict(version=-1), dict(version="1"), dict(version=True), dict(actions=b""), dict(actions="text"),
    dict(table_id=""), dict(commit_timestamp=-5)])
def test_bad_arguments_are_refused_before_anything_is_written(make_owner, tmp_path, bad):
    owner = make_owner()
    storage, tid = new_table(tmp_path, owner)
    args = dict(table_id=tid, version=1, actions=payload("x"), commit_timestamp=1)
    args.update(bad)
    with pytest.raises(InvalidArgumentError):
        owner.commit(storage, **args)
    assert commit_files(storage) == []


def test_copied_table_with_the_same_id_is_refused(make_owner, tmp_path):
    owner = make_owner()
    storage, tid = new_table(tmp_path, owner)
    copy = Storage(str(tmp_path / "copy"))
    copy.put_if_absent(commit_path(0), payload("v0"))
    with pytest.raises(CommitFailedError, match="registered .* for") as ei:
        owner.commit(copy, tid, 1, payload("x"), 1)
    assert not ei.value.retryable
    assert commit_files(copy) == []
    # the same location spelled as a plain path is the same table
    owner.commit(Storage(storage.root), tid, 1, payload("ok"), 1)
    assert backfilled(storage) == [0, 1]


# ----------------------------------------------------------------- backfill
def test_batch_size_n_backfills_when_n_commits_are_pending(make_owner, tmp_path):
    owner = make_owner(batch=3)
    storage, tid = new_table(tmp_path, owner)
    owner.commit(storage, tid, 1, payload("1"), 11)
    owner.commit(storage, tid, 2, payload("2"), 12)
    assert backfilled(storage) == [0]
    resp = owner.get_commits(tid)
    assert [c.version for c in resp.commits] == [1, 2] and resp.latest_table_version == 2
    assert [c.commit_timestamp for c in resp.commits] == [11, 12]
    assert [c.version for c in owner.get_commits(tid, 2).commits] == [2]
    assert [c.version for c in owner.get_commits(tid, 0, 1).commits] == [1]
    owner.commit(storage, tid, 3, payload("3"), 13)
    assert backfilled(storage) == [0, 1, 2, 3]
    assert owner.get_commits(tid) == GetCommitsResponse([], 3)
    for v in (1, 2, 3):
        assert storage.read_bytes(commit_path(v)) == payload(str(v))
    owner.commit(storage, tid, 4, payload("4"), 14)
    assert backfilled(storage) == [0, 1, 2, 3]
    assert owner.backfill_to_version(storage, tid) == 4
    assert backfilled(storage) == [0, 1, 2, 3, 4]


def test_backfill_copies_strictly_in_version_order(make_owner, tmp_path):
    owner = make_owner(batch=100)
    storage, tid = new_table(tmp_path, owner)
    for v in range(1, 8):
        owner.commit(storage, tid, v, payload(str(v)), v)
    rec = RecordingStorage(storage.root)
    assert owner.backfill_commits(rec, tid, 4) == [1, 2, 3, 4]
    assert owner.backfill_commits(rec, tid) == [5, 6, 7]
    assert rec.puts == [commit_path(v) for v in range(1, 8)]
    assert owner.backfill_commits(rec, tid) == []


def test_backfill_to_a_version_the_owner_did_not_ratify_is_refused(make_owner, tmp_path):
    owner = make_owner(batch=100)
    storage, tid = new_table(tmp_path, owner)
    owner.commit(storage, tid, 1, payload("1"), 1)
    with pytest.raises(InvalidArgumentError, match="only up to 1"):
        owner.backfill_to_version(storage, tid, 2)
    assert backfilled(storage) == [0]
    with pytest.raises(InvalidArgumentError, match="does not know"):
        owner.backfill_to_version(storage, str(uuid.uuid4()))


def test_failed_backfill_does_not_fail_the_commit(make_owner, tmp_path):
    owner = make_owner(batch=1)
    storage, tid = new_table(tmp_path, owner)
    broken = FailingBackfillStorage(storage.root)
    c = owner.commit(broken, tid, 1, payload("1"), 1)
    assert c.version == 1
    assert backfilled(storage) == [0]
    assert [x.version for x in owner.get_commits(tid).commits] == [1]
    # the next commit (storage healthy again) backfills both, in order
    owner.commit(storage, tid, 2, payload("2"), 2)
    assert backfilled(storage) == [0, 1, 2]
    assert storage.read_bytes(commit_path(1)) == payload("1")


def test_backfill_finishing_a_crashed_backfill_accepts_identical_files(make_owner, tmp_path):
    owner = make_owner(batch=100)
    storage, tid = new_table(tmp_path, owner)
    c1 = owner.commit(storage, tid, 1, payload("1"), 1)
    owner.commit(storage, tid, 2, payload("2"), 2)
    # an earlier backfill copied version 1 and died before telling the owner
    assert storage.put_if_absent(commit_path(1), storage.read_bytes(c1.rel_path))
    assert owner.backfill_to_version(storage, tid) == 2
    assert storage.read_bytes(commit_path(2)) == payload("2")


def test_backfill_over_different_content_is_a_corrupt_log(make_owner, tmp_path):
    owner = make_owner(batch=100)
    storage, tid = new_table(tmp_path, owner)
    owner.commit(storage, tid, 1, payload("1"), 1)
    owner.commit(storage, tid, 2, payload("2"), 2)
    storage.put_if_absent(commit_path(2), payload("written without the owner"))
    with pytest.raises(CorruptLogError, match="different content") as ei:
        owner.backfill_to_version(storage, tid)
    assert ei.value.path.endswith(commit_path(2))
    # version 1 was copied and recorded; version 2 stays tracked for a human to resolve
    assert storage.read_bytes(commit_path(1)) == payload("1")
    assert [c.version for c in owner.get_commits(tid).commits] == [2]
    assert storage.read_bytes(commit_path(2)) == payload("written without the owner")


def test_backfill_of_a_modified_commit_file_is_refused(make_owner, tmp_path):
    owner = make_owner(batch=100)
    storage, tid = new_table(tmp_path, owner)
    c = owner.commit(storage, tid, 1, payload("1"), 1)
    storage.write_atomic(c.rel_path, payload("1") + b'{"add":{}}\n')
    with pytest.raises(CorruptLogError, match="modified"):
        owner.backfill_to_version(storage, tid)
    assert backfilled(storage) == [0]


def test_listing_race_is_visible_in_latest_table_version(make_owner, tmp_path):
    """A reader lists _delta_log, then a backfill runs, then it asks the owner: the answer's
    latest_table_version tells it that its listing was stale."""
    owner = make_owner(batch=100)
    storage, tid = new_table(tmp_path, owner)
    for v in range(1, 5):
        owner.commit(storage, tid, v, payload(str(v)), v)
    listed = max(backfilled(storage))              # the reader's listing: version 0
    owner.backfill_to_version(storage, tid, 2)     # meanwhile, a backfill
    resp = owner.get_commits(tid, listed + 1)
    assert [c.version for c in resp.commits] == [3, 4] and resp.latest_table_version == 4
    assert resp.commits[0].version > listed + 1     # gap after the listing: list again
    owner.backfill_to_version(storage, tid)
    resp = owner.get_commits(tid, listed + 1)
    assert resp.commits == [] and resp.latest_table_version == 4 > listed
    relisted = max(backfilled(storage))
    assert relisted == resp.latest_table_version


def test_two_tables_do_not_interfere(make_owner, tmp_path):
    owner = make_owner(batch=2)
    s1, t1 = new_table(tmp_path, owner, "one")
    s2, t2 = new_table(tmp_path, owner, "two")
    owner.commit(s1, t1, 1, payload("1-1"), 1)
    owner.commit(s2, t2, 1, payload("2-1"), 1)
    owner.commit(s2, t2, 2, payload("2-2"), 2)
    owner.commit(s1, t1, 2, payload("1-2"), 2)
    owner.commit(s1, t1, 3, payload("1-3"), 3)
    assert owner.get_commits(t1).latest_table_version == 3
    assert owner.get_commits(t2).latest_table_version == 2
    assert [c.version for c in owner.get_commits(t1).commits] == [3]
    assert owner.get_commits(t2).commits == []
    assert backfilled(s1) == [0, 1, 2] and backfilled(s2) == [0, 1, 2]
    assert s2.read_bytes(commit_path(2)) == payload("2-2")
    with pytest.raises(CommitFailedError):
        owner.commit(s2, t1, 4, payload("wrong table"), 4)
    assert owner.get_commits(t1).latest_table_version == 3


def test_unknown_table_has_no_commits(make_owner):
    owner = make_owner()
    assert owner.get_commits(str(uuid.uuid4())) == GetCommitsResponse([], -1)
    assert owner.describe_table(str(uuid.uuid4())) is None


# ------------------------------------------------------------ store failures
def test_store_failure_after_ratification_is_recognised_as_success(make_owner, tmp_path):
    owner = make_owner(batch=1)
    storage, tid = new_table(tmp_path, owner)
    real = owner._ratify

    def ratify_then_lose_the_answer(table_id, commit):
        assert real(table_id, commit)
        raise ConnectionError("connection reset after COMMIT")

    owner._ratify = ratify_then_lose_the_answer
    c = owner.commit(storage, tid, 1, payload("1"), 1)
    owner._ratify = real
    assert c.version == 1 and storage.read_bytes(commit_path(1)) == payload("1")


def test_store_failure_before_ratification_is_retryable_and_cleans_up(make_owner, tmp_path):
    owner = make_owner(batch=1)
    storage, tid = new_table(tmp_path, owner)

    def unreachable(table_id, commit):
        raise ConnectionError("connection refused")

    owner._ratify = unreachable
    with pytest.raises(CommitFailedError, match="connection refused") as ei:
        owner.commit(storage, tid, 1, payload("1"), 1)
    assert ei.value.retryable and not ei.value.conflict
    assert owner.get_commits(tid) == GetCommitsResponse([], 0)
    assert backfilled(storage) == [0]


def test_outcome_unknown_when_the_store_cannot_be_asked(make_owner, tmp_path):
    owner = make_owner(batch=1)
    storage, tid = new_table(tmp_path, owner)

    def down(*a, **k):
        raise ConnectionError("database went away")

    owner._ratify = down
    owner._read_commits = down
    with pytest.raises(CommitFailedError, match="cannot be reached") as ei:
        owner.commit(storage, tid, 1, payload("1"), 1)
    assert not ei.value.retryable


# ------------------------------------------------- registration and ownership
def test_register_is_idempotent_and_checks_the_location(make_owner, tmp_path):
    owner = make_owner()
    storage, tid = new_table(tmp_path, owner)
    owner.commit(storage, tid, 1, payload("1"), 1)
    owner.register_table(tid, storage.uri, 0)       # again: nothing changes
    owner.register_table(tid, storage.root, 1)      # same place, other spelling
    assert owner.describe_table(tid).latest_version == 1
    with pytest.raises(InvalidArgumentError, match="already registered"):
        owner.register_table(tid, str(tmp_path / "elsewhere"), 1)
    with pytest.raises(InvalidTableStateError, match="not ratified"):
        owner.register_table(tid, storage.uri, 5)
    with pytest.raises(InvalidArgumentError):
        owner.register_table(tid, storage.uri, -1)


def ownership_commit(table_id: str, owner_name: str) -> bytes:
    return (json.dumps({"commitInfo": {"inCommitTimestamp": 5}}) + "\n"
            + json.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": 7,
                                       "writerFeatures": ["managedCommit", "inCommitTimestamp"]}}) + "\n"
            + json.dumps({"metaData": {"id": table_id, "configuration": {
                "delta.managedCommit.commitOwner": owner_name}}}) + "\n").encode()


def test_proposal_is_confirmed_by_the_next_commit_if_its_proposer_died(make_owner, tmp_path):
    owner = make_owner()
    storage = Storage(str(tmp_path / "t"))
    storage.put_if_absent(commit_path(0), payload("v0"))
    tid = str(uuid.uuid4())
    owner.propose_ownership(tid, storage.uri, 1)
    owner.propose_ownership(tid, storage.uri, 1)   # idempotent
    assert owner.get_commits(tid) == GetCommitsResponse([], -1)
    with pytest.raises(CommitFailedError, match="has not landed") as ei:
        owner.commit(storage, tid, 2, payload("2"), 2)
    assert not ei.value.retryable and commit_files(storage) == []
    # the ownership commit lands; the proposer dies before register_table
    assert storage.put_if_absent(commit_path(1), ownership_commit(tid, owner.name))
    owner.commit(storage, tid, 2, payload("2"), 2)
    assert owner.describe_table(tid).state == "active"
    assert backfilled(storage) == [0, 1, 2]


@pytest.mark.parametrize("named", ["us", "another owner"])
def test_unregistered_ownership_commit_is_adopted_only_if_it_names_us(make_owner, tmp_path, named):
    """The creator died after writing version 0 (the ownership commit) and before registering."""
    owner = make_owner()
    storage = Storage(str(tmp_path / "t"))
    tid = str(uuid.uuid4())
    storage.put_if_absent(commit_path(0), ownership_commit(tid, owner.name if named == "us" else "other"))
    if named == "us":
        owner.commit(storage, tid, 1, payload("1"), 1)
        assert owner.describe_table(tid).latest_version == 1 and backfilled(storage) == [0, 1]
    else:
        with pytest.raises(CommitFailedError, match="does not know table"):
            owner.commit(storage, tid, 1, payload("1"), 1)
        assert owner.describe_table(tid) is None and commit_files(storage) == []


def test_forgotten_proposal_leaves_no_trace(make_owner, tmp_path):
    owner = make_owner()
    storage = Storage(str(tmp_path / "t"))
    storage.put_if_absent(commit_path(0), payload("v0"))
    tid = str(uuid.uuid4())
    owner.propose_ownership(tid, storage.uri, 1)
    # a filesystem writer took version 1 first
    storage.put_if_absent(commit_path(1), payload("filesystem commit"))
    assert owner.forget_proposal(storage, tid, 1) is True
    assert owner.describe_table(tid) is None
    assert owner.forget_proposal(storage, tid, 1) is False   # nothing left to forget


def test_forgetting_a_proposal_that_landed_confirms_it(make_owner, tmp_path):
    """Two clients proposed the same ownership; the loser's forget must not drop the
    winner's: the RFC forbids refusing ownership once the ownership commit exists."""
    owner = make_owner()
    storage = Storage(str(tmp_path / "t"))
    storage.put_if_absent(commit_path(0), payload("v0"))
    tid = str(uuid.uuid4())
    owner.propose_ownership(tid, storage.uri, 1)
    storage.put_if_absent(commit_path(1), ownership_commit(tid, owner.name))
    assert owner.forget_proposal(storage, tid, 1) is False
    assert owner.describe_table(tid).state == "active"
    with pytest.raises(InvalidTableStateError, match="already manages"):
        owner.propose_ownership(tid, storage.uri, 2)


def test_ownership_commit_for_another_owner_does_not_confirm(make_owner, tmp_path):
    owner = make_owner()
    storage = Storage(str(tmp_path / "t"))
    storage.put_if_absent(commit_path(0), payload("v0"))
    tid = str(uuid.uuid4())
    owner.propose_ownership(tid, storage.uri, 1)
    storage.put_if_absent(commit_path(1), ownership_commit(tid, "some-other-owner"))
    assert owner.forget_proposal(storage, tid, 1) is True


def test_stop_and_resume_accepting(make_owner, tmp_path):
    owner = make_owner(batch=100)
    storage, tid = new_table(tmp_path, owner)
    owner.commit(storage, tid, 1, payload("1"), 1)
    assert owner.stop_accepting(tid) == 1
    assert owner.stop_accepting(tid) == 1   # idempotent
    with pytest.raises(CommitFailedError, match="not accepting") as ei:
        owner.commit(storage, tid, 2, payload("2"), 2)
    assert not ei.value.retryable and commit_files(storage) == [owner.get_commits(tid).commits[0].file_name]
    # a closed table can still be backfilled and read
    assert owner.backfill_to_version(storage, tid) == 1
    owner.resume_accepting(tid)
    owner.commit(storage, tid, 2, payload("2"), 2)
    assert owner.get_commits(tid).latest_table_version == 2
    with pytest.raises(InvalidTableStateError):
        owner.stop_accepting(str(uuid.uuid4()))


# ------------------------------------------------------------- configuration
@pytest.mark.parametrize("key", ["password", "apiToken", "SECRET_ID", "aws_secret_access_key",
                                 "credentials", "privateKey", "db_pwd",
                                 # the names the connection log redacted but the owner conf let through
                                 "connection_string", "azure_conn_str", "sas", "session"])
def test_secret_looking_conf_keys_are_refused(key):
    with pytest.raises(InvalidArgumentError, match="look like secrets"):
        check_owner_conf({"url": "sqlite:////x.db", key: "v"})
    with pytest.raises(InvalidArgumentError, match="look like secrets"):
        SqlCommitOwner.from_conf({"url": "sqlite:////x.db", key: "v"})
    with pytest.raises(InvalidArgumentError):
        owner_from_conf("sql", {"url": "sqlite:////x.db", key: "v"})
    with pytest.raises(InvalidTableStateError, match="look like secrets"):
        parse_owner_conf(json.dumps({key: "v"}))


def test_conf_must_be_a_string_map():
    with pytest.raises(InvalidArgumentError):
        check_owner_conf({"url": 5})
    with pytest.raises(InvalidArgumentError):
        check_owner_conf(["url"])
    with pytest.raises(InvalidTableStateError, match="not valid JSON"):
        parse_owner_conf("{url:")
    assert parse_owner_conf(None) == {} and parse_owner_conf('{"a":"b"}') == {"a": "b"}


def test_in_memory_owner_conf_and_rebuild():
    owner = InMemoryCommitOwner()
    assert owner.name == "in-memory" and owner.owner_conf() == {}
    with pytest.raises(InvalidArgumentError, match="cannot be rebuilt"):
        owner_from_conf("in-memory", {})
    with pytest.raises(UnsupportedFeatureError, match="unknown commit owner"):
        owner_from_conf("unity", {})
    with pytest.raises(InvalidArgumentError):
        InMemoryCommitOwner(backfill_batch_size=0)


def test_sql_owner_conf_never_holds_the_password(tmp_path, postgres_url):
    url = sa.engine.make_url(postgres_url).set(password="s3cr3t-pw")
    url = url.update_query_dict({"application_name": "delta", "sslpassword": "also-secret"})
    owner = SqlCommitOwner(url.render_as_string(hide_password=False), backfill_batch_size=4)
    try:
        conf = owner.owner_conf()
        text = json.dumps(conf)
        assert "s3cr3t-pw" not in text and "also-secret" not in text and "sslpassword" not in text
        assert "application_name=delta" in conf["url"] and conf["backfillBatchSize"] == "4"
        assert "s3cr3t-pw" not in repr(owner)
        rebuilt = SqlCommitOwner.from_conf(conf, password="s3cr3t-pw")
        assert rebuilt.engine.url.password == "s3cr3t-pw" and rebuilt.backfill_batch_size == 4
        assert rebuilt.owner_conf() == conf
        rebuilt.dispose()
    finally:
        owner.dispose()


def test_sqlite_url_is_made_absolute_and_in_memory_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    owner = SqlCommitOwner("sqlite:///sub/owner.db")
    assert owner.owner_conf()["url"] == f"sqlite:///{tmp_path}/sub/owner.db"
    assert (tmp_path / "sub" / "owner.db").exists()
    owner.dispose()
    for bad in ("sqlite://", "sqlite:///:memory:"):
        with pytest.raises(InvalidArgumentError, match="in-memory SQLite"):
            SqlCommitOwner(bad)
    with pytest.raises(InvalidArgumentError, match="not a SQLAlchemy database URL"):
        SqlCommitOwner("no url at all")
    with pytest.raises(InvalidArgumentError, match="needs a 'url'"):
        SqlCommitOwner.from_conf({})


def test_sql_owner_survives_pickling_and_shares_state(tmp_path):
    owner = SqlCommitOwner(f"sqlite:///{tmp_path}/o.db", backfill_batch_size=7)
    storage, tid = new_table(tmp_path, owner)
    owner.commit(storage, tid, 1, payload("1"), 1)
    copy = pickle.loads(pickle.dumps(owner))
    assert copy.backfill_batch_size == 7 and copy.owner_conf() == owner.owner_conf()
    assert [c.version for c in copy.get_commits(tid).commits] == [1]
    copy.commit(storage, tid, 2, payload("2"), 2)
    assert owner.get_commits(tid).latest_table_version == 2
    copy.dispose()
    owner.dispose()


def test_schema_creation_is_idempotent_in_one_process(tmp_path):
    url = f"sqlite:///{tmp_path}/o.db"
    a = SqlCommitOwner(url)
    storage, tid = new_table(tmp_path, a)
    b = SqlCommitOwner(url)   # the tables exist: nothing is recreated or lost
    assert b.describe_table(tid).latest_version == 0
    names = set(sa.inspect(b.engine).get_table_names())
    assert {"delta_owner_tables", "delta_owner_commits"} <= names
    a.dispose()
    b.dispose()


def test_storage_without_atomic_put_is_refused_for_commit_files(tmp_path):
    """The _commits file is written put-if-absent too; an fsspec backend without it fails clearly."""
    owner = InMemoryCommitOwner()
    storage = Storage(str(tmp_path / "t"))
    storage.put_if_absent(commit_path(0), payload("v0"))
    tid = str(uuid.uuid4())
    owner.register_table(tid, storage.uri, 0)

    class NoAtomicPut(Storage):
        def put_if_absent(self, rel, data):
            raise StorageError("no atomic put-if-absent here")

    with pytest.raises(StorageError):
        owner.commit(NoAtomicPut(storage.root), tid, 1, payload("1"), 1)
    assert owner.get_commits(tid).latest_table_version == 0


def test_threads_sharing_one_owner_never_lose_a_commit(make_owner, tmp_path):
    """One owner object used by several threads (e.g. tasks of one worker process)."""
    import threading

    owner = make_owner(batch=2)
    storage, tid = new_table(tmp_path, owner)
    threads_n, per_thread = 4, 10
    won: list[tuple[int, str]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(threads_n)

    def work(t: int) -> None:
        try:
            start.wait(30)
            for i in range(per_thread):
                while True:
                    v = owner.get_commits(tid).latest_table_version + 1
                    try:
                        owner.commit(storage, tid, v, payload(f"{t}-{i}"), v)
                    except CommitFailedError as e:
                        if e.retryable and e.conflict:
                            continue
                        raise
                    with lock:
                        won.append((v, f"{t}-{i}"))
                    break
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(threads_n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert not errors
    total = threads_n * per_thread
    assert sorted(v for v, _ in won) == list(range(1, total + 1))
    assert owner.backfill_to_version(storage, tid) == total
    for v, tag in won:
        assert storage.read_bytes(commit_path(v)) == payload(tag)
