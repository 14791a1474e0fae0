"""Session fixtures for the object-store tests: one server per store, started on first use.

``store`` is parametrised over S3 (moto), Azure Blob (Azurite) and GCS (gcp-storage-emulator);
see objectstore_servers.py for how each is started and what a test gets.
"""
from __future__ import annotations

import os
import tempfile

# gcsfs >= 2026 asks Google's storage-control gRPC API for a bucket's layout before each
# write, with a 60 s retry budget; an emulator has no such API. Plain GCS behaviour is all
# the emulator serves (must be set before gcsfs is imported; child processes inherit it).
os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
# The Airflow parts run without a metadata database (connections from AIRFLOW_CONN_*), in a
# throw-away home unless tests/airflow's conftest already set one up.
if "AIRFLOW_HOME" not in os.environ:
    os.environ["AIRFLOW_HOME"] = tempfile.mkdtemp(prefix="airflow-home-objectstore-")

import pytest  # noqa: E402

from objectstore_servers import azure_store, gcs_store, s3_store, start_azurite, start_gcs, start_moto  # noqa: E402

STORES = ["s3", "azure", "gcs"]
_STARTERS = {"s3": (start_moto, s3_store), "azure": (start_azurite, azure_store), "gcs": (start_gcs, gcs_store)}


@pytest.fixture(scope="session")
def object_stores(tmp_path_factory):
    """Started servers by kind, started lazily; all stopped at the end of the session."""
    started: dict = {}

    def get(kind: str):
        if kind not in started:
            start, make_store = _STARTERS[kind]
            server = start(tmp_path_factory.mktemp(f"{kind}-server"))
            try:
                started[kind] = make_store(server)
            except Exception:
                server.stop()
                raise
        return started[kind]

    yield get
    for store in started.values():
        store.server.stop()


@pytest.fixture(params=STORES)
def store(request, object_stores):
    """One object store (a fresh table URI per ``store.uri()`` call)."""
    return object_stores(request.param)
