"""Break review of airflow-prod: the dependency ranges of pyproject.toml.

pyproject.toml says pyspark and pyspark-client "write into the same pyspark/ folder and must be the
same version", and then gives each an independent range (>=4.0,<5). Package metadata cannot tie two
ranges together, so a deployment that constrains one (pyspark==4.0.1, say, to match its cluster) gets
the newest of the other: `pip install --dry-run --no-deps "pyspark==4.0.1" "pyspark-client>=4.0,<5"`
answers "Would install pyspark-4.0.1 pyspark-client-4.2.0", one folder overwritten by the other.
Without any constraint it is mixed already: pyspark 4.3.0 is out, pyspark-client stops at 4.2.0, and
`pip install --dry-run --no-deps "pyspark>=4.0,<5" "pyspark-client>=4.0,<5"` answers
"Would install pyspark-4.3.0 pyspark-client-4.2.0" (and neither range keeps pyspark at the 4.2.0
the project pairs with its Delta Spark 4.4.0 jars).
"""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
#: some 4.x releases of both packages (`pip index versions pyspark-client` lists 4.0.0 ... 4.2.0 today,
#: `pip index versions pyspark` 4.0.0 ... 4.3.0)
RELEASES = [Version(v) for v in ("4.0.0", "4.0.1", "4.1.0", "4.2.0")]


@pytest.mark.xfail(strict=True, reason="pyspark and pyspark-client are both base dependencies with independent "
                   "ranges: pip may install pyspark 4.0.1 with pyspark-client 4.2.0 into the same pyspark/ folder "
                   "(the project's own comment says they must be the same version)")
def test_base_dependencies_cannot_mix_pyspark_and_pyspark_client_versions():
    deps = {r.name: r for r in map(Requirement, tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"])}
    if "pyspark" not in deps or "pyspark-client" not in deps:
        return                                        # only one of them: nothing to keep equal
    mixed = [(a, b) for a in RELEASES for b in RELEASES
             if a != b and a in deps["pyspark"].specifier and b in deps["pyspark-client"].specifier]
    assert not mixed, f"allowed mixes (pyspark, pyspark-client): {mixed[:3]}..."
