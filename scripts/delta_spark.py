"""Spark settings that turn on Delta Spark (and s3a://), from the jars `make jars` fetched into .jars/.

Used by the tests (the shared SparkSession in tests/conftest.py) and by examples::

    from delta_spark import spark_conf          # with scripts/ on sys.path
    builder = SparkSession.builder
    for key, value in spark_conf().items():
        builder = builder.config(key, value)

The Delta <-> Spark pair is recorded in one place, scripts/delta-spark/pom.xml (properties
``delta.version`` and ``spark.version``); pyproject.toml (test extra) pins pyspark and pyspark-client to
that Spark version. The same pom pins hadoop-aws (``hadoop.version``, which must be the Hadoop
that pyspark ships) and the AWS SDK modules of the s3a connector. The stamp .jars/.fetched
records a fingerprint of the pom, so jars fetched for an older pom are reported as stale
instead of failing later with a missing class. No Airflow and no pyspark import here.
"""
from __future__ import annotations

import hashlib
import importlib.util
import re
import xml.etree.ElementTree as ET
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POM = ROOT / "scripts" / "delta-spark" / "pom.xml"
JARS_ROOT = ROOT / ".jars"
STAMP = JARS_ROOT / ".fetched"

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"

_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


class DeltaSparkJarsMissing(RuntimeError):
    """The Delta Spark jars are not in .jars/ (or do not match the installed pyspark)."""


@lru_cache(maxsize=None)
def _properties() -> dict[str, str]:
    root = ET.parse(POM).getroot()
    return {e.tag.split("}")[1]: (e.text or "").strip() for e in root.find("m:properties", _NS)}


@lru_cache(maxsize=None)
def _pom() -> tuple[str, str, str, str]:
    root = ET.parse(POM).getroot()
    props = _properties()
    dep = root.find("m:dependencies/m:dependency", _NS)
    group = dep.find("m:groupId", _NS).text.strip()
    artifact = dep.find("m:artifactId", _NS).text.strip()
    for key, value in props.items():
        artifact = artifact.replace("${%s}" % key, value)
    return props["delta.version"], props["spark.version"], group, artifact


def versions() -> tuple[str, str]:
    """(Delta version, Spark version) of the pinned pair, e.g. ('4.4.0', '4.2.0')."""
    delta, spark, _, _ = _pom()
    return delta, spark


def coordinates() -> str:
    """Maven coordinates of the Delta Spark artifact, e.g. 'io.delta:delta-spark_4.2_2.13:4.4.0'."""
    delta, _, group, artifact = _pom()
    return f"{group}:{artifact}:{delta}"


def hadoop_version() -> str:
    """The Hadoop version hadoop-aws is pinned at (pyspark's own, e.g. '3.5.0')."""
    return _properties()["hadoop.version"]


def pom_fingerprint() -> str:
    """A short hash of the pom: the stamp records it, so a changed pom makes old jars stale."""
    return hashlib.sha256(POM.read_bytes()).hexdigest()[:16]


def stamp_text() -> str:
    """What scripts/fetch_delta_jars.py writes into the stamp after a complete fetch."""
    delta, spark = versions()
    return f"{coordinates()} spark {spark} hadoop-aws {hadoop_version()} pom {pom_fingerprint()}\n"


def jars_dir() -> Path:
    return JARS_ROOT / f"delta-spark-{versions()[0]}"


def jar_paths() -> list[Path]:
    """The jars for ``spark.jars``; raises DeltaSparkJarsMissing (saying: run `make jars`) if absent."""
    delta, spark = versions()
    listing = jars_dir() / "jars.txt"
    hint = "run `make jars` (it fetches them through Maven into .jars/)"
    if not listing.is_file():
        raise DeltaSparkJarsMissing(f"the Delta Spark {delta} jars (for Spark {spark}) are missing "
                                    f"in {jars_dir()}: {hint}")
    names = [ln.strip() for ln in listing.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    paths = [jars_dir() / n for n in names]
    missing = [p.name for p in paths if not p.is_file()]
    if missing or not paths:
        raise DeltaSparkJarsMissing(f"the Delta Spark {delta} jars in {jars_dir()} are incomplete "
                                    f"(missing: {', '.join(missing) or 'all'}): {hint}")
    if not STAMP.is_file() or STAMP.read_text() != stamp_text():
        raise DeltaSparkJarsMissing(f"the jars in {jars_dir()} were fetched for another version of {POM.name} "
                                    f"(it now also pins hadoop-aws {hadoop_version()}): {hint}")
    return paths


def _pyspark_hadoop() -> str | None:
    """The Hadoop version of the installed pyspark (from its hadoop-client-api jar), if found."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    for jar in (Path(list(spec.submodule_search_locations)[0]) / "jars").glob("hadoop-client-api-*.jar"):
        m = re.fullmatch(r"hadoop-client-api-(.+)\.jar", jar.name)
        if m:
            return m.group(1)
    return None


def check_pyspark() -> None:
    """Raise DeltaSparkJarsMissing if the installed pyspark is not the Spark the jars are built for."""
    from importlib.metadata import PackageNotFoundError, version
    delta, spark = versions()
    try:
        installed = version("pyspark")
    except PackageNotFoundError:
        return
    if installed.split(".")[:2] != spark.split(".")[:2]:
        raise DeltaSparkJarsMissing(
            f"pyspark {installed} is installed, but Delta {delta} is pinned for Spark {spark} "
            "(scripts/delta-spark/pom.xml); pin pyspark/pyspark-client in pyproject.toml (test extra) to match "
            "and run `make install jars`")
    hadoop = _pyspark_hadoop()
    if hadoop is not None and hadoop != hadoop_version():
        raise DeltaSparkJarsMissing(
            f"pyspark {installed} ships Hadoop {hadoop}, but hadoop-aws is pinned at {hadoop_version()} in "
            f"{POM}: set hadoop.version to {hadoop} (and awssdk.version to what that hadoop-aws declares) "
            "and run `make jars`")


def spark_conf() -> dict[str, str]:
    """Spark settings for Delta Spark: spark.jars, the Delta SQL extension and catalog."""
    check_pyspark()
    return {
        "spark.jars": ",".join(str(p) for p in jar_paths()),
        "spark.sql.extensions": DELTA_EXTENSION,
        "spark.sql.catalog.spark_catalog": DELTA_CATALOG,
    }


def configure(builder):
    """Apply spark_conf() to a SparkSession.Builder and return it."""
    for key, value in spark_conf().items():
        builder = builder.config(key, value)
    return builder


if __name__ == "__main__":  # `python scripts/delta_spark.py`: print the settings (or the problem)
    import sys
    try:
        for k, v in spark_conf().items():
            print(f"{k}={v}")
    except DeltaSparkJarsMissing as e:
        print(f"ERROR: {e}", file=sys.stderr)
        sys.exit(1)
