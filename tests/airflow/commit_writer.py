"""Another process committing to a table: the counterpart of the deferrable-sensor test.

Usage: ``commit_writer.py TABLE MARKER DELAY``. Waits until ``MARKER`` exists (the
sensor has started), sleeps ``DELAY`` seconds so the sensor has deferred, then makes
three commits: a plain append, and two appends that carry a ``txn`` action of app id
``external-writer`` (versions 1 and 2). Prints the committed versions as JSON.
"""
from __future__ import annotations

import json
import os
import sys
import time
import uuid

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.commit_actions import AddFile

APP_ID = "external-writer"


def commit_with_txn(table: DeltaTable, txn_version: int) -> int:
    rel = f"day=2026-03-01/part-{uuid.uuid4().hex}.parquet"
    path = os.path.join(table.storage.root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(pa.table({"id": [1000 + txn_version]}), path)
    add = AddFile(rel, os.path.getsize(path), {"day": "2026-03-01"}, int(time.time() * 1000))
    with table.transaction(operation="WRITE", operation_parameters={"mode": "Append"}) as txn:
        txn.set_txn(APP_ID, txn_version)
        txn.add_file(add)
    return int(txn.version)


def main(table_uri: str, marker: str, delay: float) -> None:
    deadline = time.time() + 300
    while not os.path.exists(marker):
        if time.time() > deadline:
            raise SystemExit("the sensor never started")
        time.sleep(0.1)
    time.sleep(delay)
    table = DeltaTable(table_uri)
    versions = [table.write(pa.table({"id": [999], "day": ["2026-03-01"]}))]
    time.sleep(0.5)
    versions.append(commit_with_txn(table, 1))
    time.sleep(0.5)
    versions.append(commit_with_txn(table, 2))
    print(json.dumps(versions), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]))
