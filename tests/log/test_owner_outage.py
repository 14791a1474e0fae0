"""A commit owner whose database stops answering: typed, retryable errors, nothing written, nothing lost.

The outage is real: the owner talks to PostgreSQL through a TCP relay owned by the
test, and the relay is shut (listener and open connections) mid-run, then reopened
on the same port. SQLAlchemy and psycopg see exactly what a dropped network or a
restarting server gives them.
"""
from __future__ import annotations

import os
import socket
import threading

import pyarrow as pa
import pytest
from sqlalchemy.engine import make_url

from airflow_provider_delta.log import (CommitFailedError, CommitOutcomeUnknownError, CommitOwnerUnavailableError,
                                        DeltaTable)
from airflow_provider_delta.log.base.commit_owner import SqlCommitOwner

SCHEMA = pa.schema([("id", pa.int64())])


class Relay:
    """Forwards TCP connections from a loopback port to ``target``; ``cut()`` drops everything."""

    def __init__(self, target: tuple[str, int], port: int = 0):
        self.target = target
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", port))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        listener = self._listener
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        try:
            self._listener.shutdown(socket.SHUT_RDWR)   # wakes the accept() thread; close() alone does not
        except OSError:
            pass
        self._listener.close()
        with self._lock:
            conns, self._conns = self._conns, []
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


@pytest.fixture
def relayed_url(postgres_url):
    u = make_url(postgres_url)
    relay = Relay((u.host or "127.0.0.1", u.port or 5432))
    state = {"relay": relay}
    yield u.set(host="127.0.0.1", port=relay.port, password="sekret-pw"), state
    state["relay"].cut()


def _log_files(table_dir) -> list[str]:
    out = []
    for root, _, names in os.walk(os.path.join(table_dir, "_delta_log")):
        out += [os.path.relpath(os.path.join(root, n), table_dir) for n in names]
    return sorted(out)


def test_commits_during_an_outage_fail_typed_and_retryable_then_resume(relayed_url, tmp_path):
    url, state = relayed_url
    owner = SqlCommitOwner(url)
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, commit_owner=owner)
    table.write(pa.table({"id": [1]}))
    before = _log_files(table.uri.removeprefix("file://"))
    relay = state["relay"]

    relay.cut()
    with pytest.raises(CommitOwnerUnavailableError) as info:
        table.write(pa.table({"id": [2]}))
    err = info.value
    assert err.retryable and not isinstance(err, CommitOutcomeUnknownError)
    assert "sekret-pw" not in str(err) and "cannot be reached" in str(err)
    with pytest.raises(CommitOwnerUnavailableError):
        SqlCommitOwner(url)        # building an owner (as a hook does) during the outage
    after = _log_files(table.uri.removeprefix("file://"))
    assert [f for f in after if f not in before and not f.endswith(".parquet")] == []

    state["relay"] = Relay(relay.target, port=relay.port)    # the database is back
    assert table.write(pa.table({"id": [3]})) == 2
    assert sorted(table.snapshot().to_pyarrow().column("id").to_pylist()) == [1, 3]
    owner.dispose()


def test_a_transaction_reports_a_known_outcome_when_nothing_was_ratified(relayed_url, tmp_path):
    url, state = relayed_url
    owner = SqlCommitOwner(url)
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, commit_owner=owner)
    txn = table.transaction()
    state["relay"].cut()
    with pytest.raises(CommitFailedError) as info:
        txn.commit()
    assert isinstance(info.value, CommitOwnerUnavailableError)
    assert txn.outcome_unknown is False
    owner.dispose()


def test_an_unopenable_sqlite_owner_is_a_typed_error(tmp_path):
    missing = tmp_path / "no-such-folder" / "owner.db"
    with pytest.raises(CommitOwnerUnavailableError, match="cannot be reached"):
        SqlCommitOwner(f"sqlite:///file:{missing}?mode=ro&uri=true")
    assert not missing.parent.exists()
