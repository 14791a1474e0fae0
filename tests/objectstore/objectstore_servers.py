"""Object-store servers on loopback for the tests: moto (S3), Azurite (Azure Blob) and a GCS emulator.

Each server is a child process on a free port, started once per test session and
waited for with a bound (``START_TIMEOUT_S``). A server whose software cannot be
installed is a skip with the reason, except when ``CI`` is set: then it is a failure,
so a CI run never passes by skipping the stores.

:class:`Store` is what a test gets: a fresh table URI per call, the fsspec
``storage_options`` for our drivers, and ``deltalake``'s own options for the same
table.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 60
AZURITE = ROOT / ".tools" / "azurite" / "node_modules" / ".bin" / "azurite-blob"
INSTALL_SCRIPT = ROOT / "scripts" / "install_test_servers.sh"
# Azurite's documented development account (public, the same in every installation).
AZURE_ACCOUNT = "devstoreaccount1"
AZURE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
S3_KEY, S3_SECRET, S3_REGION = "testing", "testing-secret", "us-east-1"
BUCKET = "delta-tests"


def unavailable(reason: str) -> None:
    """Skip (outside CI) or fail (in CI) because a server's software is missing."""
    if os.environ.get("CI"):
        pytest.fail(f"object-store server unavailable in CI: {reason}")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    """One child process answering HTTP on ``port``."""

    name: str
    proc: subprocess.Popen
    port: int
    log: Path

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(3)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def start_server(name: str, argv: list[str], port: int, workdir: Path, probe_path: str = "/",
                 env: dict[str, str] | None = None) -> Server:
    """Start ``argv`` and wait until ``probe_path`` answers (any HTTP status), within the bound."""
    log = workdir / f"{name}.log"
    proc = subprocess.Popen(argv, stdout=open(log, "wb"), stderr=subprocess.STDOUT, cwd=workdir,
                            env={**os.environ, **(env or {})})
    server = Server(name, proc, port, log)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            urllib.request.urlopen(server.endpoint + probe_path, timeout=2)
            return server
        except urllib.error.HTTPError:
            return server                      # it answers: an error status is fine
        except OSError:
            time.sleep(0.2)
    server.stop()
    raise RuntimeError(f"{name} did not answer within {START_TIMEOUT_S} s: {log.read_text()[-2000:]}")


def start_moto(workdir: Path) -> Server:
    if importlib.util.find_spec("moto") is None or importlib.util.find_spec("flask") is None:
        unavailable("moto[server] is not installed; pip install -e '.[test]'")
    port = free_port()
    return start_server("moto", [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                        port, workdir, "/moto-api/")


def start_azurite(workdir: Path) -> Server:
    if not AZURITE.exists() and shutil.which("npm"):
        subprocess.run(["bash", str(INSTALL_SCRIPT)], check=False, timeout=600)
    if not AZURITE.exists():
        unavailable(f"Azurite is not installed at {AZURITE} (needs npm; run {INSTALL_SCRIPT})")
    port = free_port()
    return start_server("azurite", [str(AZURITE), "--blobHost", "127.0.0.1", "--blobPort", str(port),
                                    "--location", str(workdir / "azurite-data"), "--skipApiVersionCheck",
                                    "--loose", "--silent"], port, workdir)


def start_gcs(workdir: Path) -> Server:
    if importlib.util.find_spec("gcp_storage_emulator") is None:
        unavailable("gcp-storage-emulator is not installed; pip install -e '.[test]'")
    port = free_port()
    return start_server("gcs", [sys.executable, "-m", "gcp_storage_emulator", "start", "--host", "127.0.0.1",
                                "--port", str(port), "--in-memory"], port, workdir, "/storage/v1/b")


@dataclass
class Store:
    """One object store of the test run, with its bucket created."""

    kind: str                       # "s3", "azure", "gcs"
    scheme: str                     # URL scheme of table URIs
    options: dict[str, Any]         # fsspec storage_options for our drivers
    #: delta-rs's options for the same tables; None where it cannot talk to this server
    deltalake_options: dict[str, str] | None
    #: whether the server makes open(.., "xb") a real conditional create
    conditional_create: bool
    server: Server = field(repr=False)

    def uri(self, name: str = "t") -> str:
        """A fresh table location (a new key prefix each call)."""
        return f"{self.scheme}://{BUCKET}/{name}-{uuid.uuid4().hex[:10]}"

    @property
    def table_kwargs(self) -> dict[str, Any]:
        """DeltaTable keyword arguments for this store: on a store without a real
        conditional create the tests run as the single writer (see docs/guides/object-stores.md)."""
        if self.conditional_create:
            return {"storage_options": self.options}
        return {"storage_options": self.options, "single_writer": True, "conditional_put": False}


def s3_store(server: Server) -> Store:
    import boto3
    boto3.client("s3", endpoint_url=server.endpoint, region_name=S3_REGION, aws_access_key_id=S3_KEY,
                 aws_secret_access_key=S3_SECRET).create_bucket(Bucket=BUCKET)
    options = {"key": S3_KEY, "secret": S3_SECRET,
               "client_kwargs": {"endpoint_url": server.endpoint, "region_name": S3_REGION}}
    dl = {"AWS_ENDPOINT_URL": server.endpoint, "AWS_REGION": S3_REGION, "AWS_ACCESS_KEY_ID": S3_KEY,
          "AWS_SECRET_ACCESS_KEY": S3_SECRET, "AWS_ALLOW_HTTP": "true", "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}
    return Store("s3", "s3", options, dl, True, server)


def azure_connection_string(server: Server) -> str:
    return (f"DefaultEndpointsProtocol=http;AccountName={AZURE_ACCOUNT};AccountKey={AZURE_KEY};"
            f"BlobEndpoint={server.endpoint}/{AZURE_ACCOUNT};")


def azure_store(server: Server) -> Store:
    from azure.storage.blob import BlobServiceClient
    BlobServiceClient.from_connection_string(azure_connection_string(server)).create_container(BUCKET)
    options = {"connection_string": azure_connection_string(server)}
    dl = {"AZURE_STORAGE_ACCOUNT_NAME": AZURE_ACCOUNT, "AZURE_STORAGE_ACCOUNT_KEY": AZURE_KEY,
          "AZURE_STORAGE_USE_EMULATOR": "true", "AZURE_ALLOW_HTTP": "true"}
    # delta-rs's Azure driver finds the emulator through this variable (default port 10000)
    os.environ["AZURITE_BLOB_STORAGE_URL"] = server.endpoint
    return Store("azure", "abfs", options, dl, True, server)


def gcs_store(server: Server) -> Store:
    import gcsfs
    options = {"endpoint_url": server.endpoint, "token": "anon", "project": "test"}
    gcsfs.GCSFileSystem(**options).mkdir(BUCKET)
    # gcp-storage-emulator accepts ifGenerationMatch=0 and overwrites anyway: not a real
    # conditional create (test_conditional_create shows our check refusing to commit there).
    # It serves only GCS's JSON API; delta-rs reads through the XML API (501 here), so the
    # deltalake cross-check runs on S3 and Azure only.
    return Store("gcs", "gs", options, None, False, server)
