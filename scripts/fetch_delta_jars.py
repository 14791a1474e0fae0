"""Fetch the Delta Spark and s3a jars (and their runtime dependencies) through Maven into .jars/.

Run by `make jars` (and so by `make test` / `make run` on first use). The release is the one
named by scripts/delta-spark/pom.xml, the single place where the Delta <-> Spark pair (and
hadoop-aws with its AWS SDK modules, for s3a://) is recorded. Jars that pyspark already ships
(Spark itself, Scala, Jackson, Hadoop, Parquet, Netty, ...) are left out, so Spark's own
versions are the only ones on the class path.

Result: .jars/delta-spark-<delta.version>/*.jar, jars.txt (the jars to put in spark.jars) and
the stamp file .jars/.fetched that make checks; it records a fingerprint of the pom, which
scripts/delta_spark.py compares, so jars fetched for an older pom count as missing. On any
failure it prints ONE line saying what could not be fetched and exits 1; Maven's own output goes to .jars/fetch.log. Maven is run
with a time limit (DELTA_JARS_FETCH_TIMEOUT seconds, default 600), so this never hangs.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from delta_spark import (JARS_ROOT, POM, STAMP, coordinates, hadoop_version, jars_dir, stamp_text,  # noqa: E402
                         versions)

_VERSIONED_JAR = re.compile(r"^(?P<name>.+?)-(?P<version>\d[^/]*)\.jar$")


def artifact_name(jar: str) -> str:
    """'jackson-core-2.21.2.jar' -> 'jackson-core'; 'zstd-jni-1.5.7-3.jar' -> 'zstd-jni'."""
    m = _VERSIONED_JAR.match(jar)
    return m.group("name") if m else jar[:-4]


def pyspark_jar_names() -> set[str]:
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return set()
    jars = Path(list(spec.submodule_search_locations)[0]) / "jars"
    return {artifact_name(p.name) for p in jars.glob("*.jar")}


def fail(message: str) -> int:
    print(f"ERROR: {message}", file=sys.stderr)
    return 1


def _mvn_error(log: str) -> str:
    """The most telling line of Maven's output (its first [ERROR] line), shortened."""
    for line in log.splitlines():
        line = re.sub(r"\x1b\[[0-9;]*m", "", line).strip()
        if line.startswith("[ERROR]") and len(line) > len("[ERROR] "):
            text = line[len("[ERROR] "):]
            return text if len(text) <= 300 else text[:297] + "..."
    return "no error message from mvn"


def main() -> int:
    delta, spark = versions()
    what = (f"Delta Spark {coordinates()} (for Spark {spark}), hadoop-aws {hadoop_version()} "
            "and their dependencies")
    mvn = shutil.which("mvn")
    if not mvn:
        return fail(f"could not fetch {what}: mvn not found on PATH (install Maven, e.g. 'apt-get install maven')")
    timeout = float(os.environ.get("DELTA_JARS_FETCH_TIMEOUT", "600"))
    JARS_ROOT.mkdir(exist_ok=True)
    log_path = JARS_ROOT / "fetch.log"
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=JARS_ROOT))
    try:
        cmd = [mvn, "-B", "-f", str(POM), "dependency:copy-dependencies",
               f"-DoutputDirectory={staging}", "-DincludeScope=runtime",
               # bounded network waits inside Maven too (the overall time limit is the backstop)
               "-Dmaven.wagon.http.retryHandler.count=2", "-Dmaven.wagon.rto=60000",
               "-Daether.connector.connectTimeout=30000", "-Daether.connector.requestTimeout=60000"]
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            log_path.write_text(out)
            return fail(f"could not fetch {what} through Maven: no answer within {timeout:.0f} s "
                        f"(log: {log_path})")
        log_path.write_text(proc.stdout)
        jars = sorted(p.name for p in staging.glob("*.jar"))
        if proc.returncode != 0 or not jars:
            return fail(f"could not fetch {what} through Maven (mvn exit {proc.returncode}: "
                        f"{_mvn_error(proc.stdout)}; log: {log_path})")
        provided = pyspark_jar_names()
        if not provided:
            return fail(f"fetched {what}, but pyspark is not installed in this Python ({sys.executable}): "
                        "run `make install` first")
        keep = [j for j in jars if artifact_name(j) not in provided]
        skipped = [j for j in jars if artifact_name(j) in provided]
        for needed in ("delta-spark_", "hadoop-aws-"):
            if not any(j.startswith(needed) for j in keep):
                return fail(f"fetched {what}, but no {needed}* jar is among them: {jars}")
        for j in skipped:
            (staging / j).unlink()
        (staging / "jars.txt").write_text(
            f"# Delta {delta} for Spark {spark}, hadoop-aws {hadoop_version()}: the jars for spark.jars, "
            "written by scripts/fetch_delta_jars.py\n"
            f"# left out because pyspark ships them: {' '.join(skipped)}\n" + "".join(f"{j}\n" for j in keep))
        target = jars_dir()
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
        target.chmod(0o755)
        STAMP.write_text(stamp_text())
        print(f"Delta Spark {delta} (Spark {spark}), hadoop-aws {hadoop_version()}: {len(keep)} jars in "
              f"{target.relative_to(JARS_ROOT.parent)}")
        return 0
    finally:
        shutil.rmtree(staging, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
