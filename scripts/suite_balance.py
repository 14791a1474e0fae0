"""How `make test`'s time splits between the Spark-session group (one worker) and the rest.

The suite must stay well under 40 minutes on 2 cores; the group that shares the one local
SparkSession runs on one worker (tests/conftest.py), so it is the floor of the wall time.
Reads pytest's JUnit XML and prints the busy seconds of each side, so the next move of a
file between them is decided on figures, not guesses.
"""
from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from conftest import in_spark_session_group  # noqa: E402  (the rule the scheduler uses)


def node_path(case: ET.Element) -> str:
    """``tests/log/test_x.py`` of JUnit's ``tests.log.test_x`` (or ``tests.log.test_x.TestClass``)."""
    parts = case.get("classname", "").split(".")
    at = next((i for i, part in enumerate(parts) if part.startswith("test_")), len(parts) - 1)
    return "/".join(parts[:at + 1]) + ".py"


def main(path: str) -> None:
    totals = {"spark-session group": 0.0, "the rest": 0.0}
    slowest: dict[str, float] = {}
    for case in ET.parse(path).iter("testcase"):
        file = node_path(case)
        seconds = float(case.get("time") or 0)
        totals["spark-session group" if in_spark_session_group(file) else "the rest"] += seconds
        slowest[file] = slowest.get(file, 0.0) + seconds
    for side, seconds in totals.items():
        print(f"suite balance: {side}: {seconds / 60:.1f} min busy")
    for file, seconds in sorted(slowest.items(), key=lambda kv: -kv[1])[:10]:
        print(f"suite balance:   {seconds:7.1f} s  {file}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "build/test-results.xml")
