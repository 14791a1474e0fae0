"""What parsing the example DAGs must not need or do, and what Airflow must accept of them.

A scheduler or dag-processor host parses ``dags_examples/`` without Spark jars and
without the example's connection; parsing defines no connection; the assets they
declare never collide (Airflow activates one asset per name and one per URI); the
``# [START ...]`` / ``# [END ...]`` markers pair up for a docs site. The same DAGs run
for real in ``test_real_deployment.py``.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from airflow.dag_processing.dagbag import DagBag
from airflow.sdk import Asset

EXAMPLES = Path(__file__).resolve().parents[2] / "dags_examples"


class JarsMissing(RuntimeError):
    """Stands for scripts/delta_spark.py's DeltaSparkJarsMissing on a host without jars."""


def no_jars() -> str:
    raise JarsMissing("no Delta Spark jars on this host")


@pytest.fixture
def bag(monkeypatch) -> DagBag:
    """The examples parsed as a dag-processor on a host without jars and without the connection."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    monkeypatch.delenv("AIRFLOW_CONN_DELTA_EXAMPLE", raising=False)
    sys.modules.pop("example_settings", None)
    import example_settings
    monkeypatch.setattr(example_settings, "delta_spark_jars", no_jars)
    parsed = DagBag(dag_folder=str(EXAMPLES))
    yield parsed
    sys.modules.pop("example_settings", None)


def test_parsing_needs_no_jars_and_defines_no_connection(bag):
    assert not bag.import_errors, bag.import_errors
    assert {"delta_ingest", "delta_downstream", "delta_maintenance", "delta_orders_audit",
            "delta_customer_changes"} <= set(bag.dags)
    assert "AIRFLOW_CONN_DELTA_EXAMPLE" not in os.environ


def test_the_jars_are_looked_up_when_the_task_renders(bag):
    task = bag.dags["delta_downstream"].get_task("customer_totals")
    assert task.jars == "{{ delta_spark_jars() }}"
    with pytest.raises(JarsMissing):                  # on the worker that runs it, not at parse time
        task.render_template_fields({"ti": None})


def leaves(condition):
    """The assets of a schedule's condition (Asset, or AssetAll / AssetAny of them)."""
    if condition is None:
        return
    if isinstance(condition, Asset):
        yield condition
    for inner in getattr(condition, "objects", ()):
        yield from leaves(inner)


def test_no_two_assets_share_a_name_or_a_uri(bag):
    """Airflow's rule for activating assets: otherwise an "asset conflict" DAG warning, an inactive asset."""
    assets = {}
    for dag in bag.dags.values():
        scheduled = list(leaves(getattr(dag.timetable, "asset_condition", None)))
        for asset in scheduled + [a for t in dag.tasks for a in t.outlets]:
            assets[(asset.name, asset.uri)] = asset
    names = [name for name, _ in assets]
    uris = [uri for _, uri in assets]
    assert len(set(names)) == len(names) and len(set(uris)) == len(uris), sorted(assets)
    watched = [a for a in assets.values() if getattr(a, "watchers", None)]
    assert [a.name for a in watched] == ["example_orders_commits"]


def test_start_and_end_markers_pair_up_with_unique_names():
    seen: set[str] = set()
    for path in sorted(EXAMPLES.glob("*.py")):
        text = path.read_text()
        starts = re.findall(r"# \[START (\w+)\]", text)
        ends = re.findall(r"# \[END (\w+)\]", text)
        assert starts == ends, path
        assert not seen & set(starts), (path, seen & set(starts))
        seen.update(starts)
        for name in starts:          # each snippet is non-empty and in order
            body = text.split(f"# [START {name}]", 1)[1].split(f"# [END {name}]", 1)[0]
            assert body.strip(), (path, name)
    assert len(seen) >= 8, seen


def test_the_deployment_steps_of_the_page_add_the_connections_the_script_adds(bag):
    """docs/examples.md, "Run the examples under a real Airflow", and scripts/airflow_deploy.py (what
    ``make airflow-up`` and test_real_deployment.py run) add the same connections, with the same JSON
    (the page's ``/ABSOLUTE/PATH/TO/example_output`` standing for the tables' base), and they are every
    connection the deployed DAGs name (``*_CONN_ID`` in example_settings.py)."""
    import json

    import example_settings
    from airflow_test_support import airflow_deploy

    page = (EXAMPLES.parent / "docs" / "examples.md").read_text()
    section = page.split("## Run the examples under a real Airflow", 1)[1].split("\n## ", 1)[0]
    base = "/ABSOLUTE/PATH/TO/example_output"
    shown = {conn_id: json.loads(conn_json) for conn_id, conn_json in re.findall(
        r"airflow connections add (\w+) --conn-json \\\n\s*'([^']*)'", section)}
    assert shown == airflow_deploy.example_connections(base)
    named = {getattr(example_settings, n) for n in dir(example_settings) if n.endswith("_CONN_ID")}
    assert named == set(shown), named
