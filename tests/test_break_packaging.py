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


def test_base_dependencies_cannot_mix_pyspark_and_pyspark_client_versions():
    deps = {r.name: r for r in map(Requirement, tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"])}
    if "pyspark" not in deps or "pyspark-client" not in deps:
        return                                        # only one of them: nothing to keep equal
    mixed = [(a, b) for a in RELEASES for b in RELEASES
             if a != b and a in deps["pyspark"].specifier and b in deps["pyspark-client"].specifier]
    assert not mixed, f"allowed mixes (pyspark, pyspark-client): {mixed[:3]}..."


def base_dependencies() -> dict[str, Requirement]:
    return {r.name: r for r in map(Requirement, tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"])}


def test_pyspark_and_pyspark_client_share_one_constraint():
    deps = base_dependencies()
    assert deps["pyspark"].specifier == deps["pyspark-client"].specifier
    # the series the Delta Spark jars are built for (scripts/delta-spark/pom.xml)
    assert Version("4.2.0") in deps["pyspark"].specifier and Version("4.3.0") not in deps["pyspark"].specifier


def _fake_dist(root: Path, name: str, version: str) -> None:
    """An installed distribution's metadata as pip leaves it (``<name>-<version>.dist-info/METADATA``)."""
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def test_a_mixed_pyspark_install_fails_naming_both_versions(tmp_path):
    from airflow.sdk.exceptions import AirflowFailException

    from airflow_provider_delta.log import DeltaError
    from airflow_provider_delta.operators.pyspark_pair import PySparkVersionMismatchError, require_matching_pyspark
    _fake_dist(tmp_path, "pyspark", "4.2.1")
    _fake_dist(tmp_path, "pyspark-client", "4.2.0")
    with pytest.raises(PySparkVersionMismatchError, match=r"pyspark 4\.2\.1 and pyspark-client 4\.2\.0") as e:
        require_matching_pyspark([str(tmp_path)])
    assert isinstance(e.value, DeltaError) and isinstance(e.value, AirflowFailException)


def test_a_matching_or_single_pyspark_install_passes(tmp_path):
    from airflow_provider_delta.operators.pyspark_pair import installed_versions, require_matching_pyspark
    require_matching_pyspark()                                    # this environment: the tested pair
    assert installed_versions() == {"pyspark": "4.2.0", "pyspark-client": "4.2.0"}
    _fake_dist(tmp_path, "pyspark", "4.2.1")
    require_matching_pyspark([str(tmp_path)])                     # pyspark alone: nothing to compare


def test_the_spark_operator_refuses_a_mixed_install_before_submitting(tmp_path, monkeypatch):
    """The operators run the check where they pick the master: a real SparkSubmitHook, nothing submitted."""
    import sys

    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    from airflow_provider_delta.operators.pyspark_pair import PySparkVersionMismatchError
    from airflow_provider_delta.operators.spark_base import resolve_master
    _fake_dist(tmp_path, "pyspark-client", "4.1.0")
    monkeypatch.setattr(sys, "path", [str(tmp_path)] + sys.path)   # found first, as a second install would be
    with pytest.raises(PySparkVersionMismatchError, match="pyspark 4.2.0 and pyspark-client 4.1.0"):
        resolve_master(SparkSubmitHook(conn_id="no_such_spark_conn"), None, "no_such_spark_conn", None)
