"""Test modules are imported by basename (rootdir imports, no packages under tests/): two files with
one name in different folders stop pytest from collecting the whole suite, which a run of one
folder at a time never shows."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_two_test_modules_share_a_basename():
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("*.py"):
        if path.name not in ("__init__.py", "conftest.py"):
            by_name[path.name].append(str(path.relative_to(TESTS)))
    assert {n: p for n, p in by_name.items() if len(p) > 1} == {}
