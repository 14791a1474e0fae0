"""Local tables whose live file is reached through a symlink: for the vacuum tests of links.

Shared by tests/log/test_break_vacuum_symlinks.py, test_break_s8_rules.py and test_break_s8_final.py,
which differ only in where the links go and how the commit names the file.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable

import pyarrow as pa
from deltalake import write_deltalake

#: how old every file of the table is made: older than any retention vacuum keeps by default
AGE_SECONDS = 30 * 86_400


def table_with_a_live_link(root: Path, add_path: str, make_links: Callable[[Path, Path], None],
                           target: str = "realdir/x.parquet") -> Path:
    """A deltalake table at ``root`` (version 0: two rows) plus version 1 adding ``add_path``, a file
    the links that ``make_links(root, target_file)`` builds lead to; ``target`` (relative to ``root``)
    is a copy of version 0's data file, so the table reads 4 rows. Every file is backdated
    :data:`AGE_SECONDS` (links to files too, not following them; a link to a directory is not
    touched: ``os.walk`` lists it as a directory). Returns the target file."""
    write_deltalake(str(root), pa.table({"x": [1, 2]}))
    src = next(root.glob("*.parquet"))
    target_file = root / target
    target_file.parent.mkdir(parents=True, exist_ok=True)
    target_file.write_bytes(src.read_bytes())
    make_links(root, target_file)
    add = {"add": {"path": add_path, "partitionValues": {}, "size": target_file.stat().st_size,
                   "modificationTime": 1, "dataChange": True}}
    info = {"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "WRITE"}}
    (root / "_delta_log" / f"{1:020d}.json").write_text(json.dumps(info) + "\n" + json.dumps(add) + "\n")
    old = time.time() - AGE_SECONDS
    for d, _dirs, files in os.walk(root):
        for f in files:
            os.utime(os.path.join(d, f), (old, old), follow_symlinks=False)
    return target_file
