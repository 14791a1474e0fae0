"""The example tables' folder: the example DAGs and the scripts that run or deploy them agree.

``dags_examples/example_settings.py`` puts the tables under this repository's ``example_output/``
whatever the working directory; ``scripts/run_example.py`` (``make run``) and
``scripts/airflow_deploy.py`` (``make airflow-up``) must default to the same folder, or a run from
another directory writes tables the DAGs never read. Checked in a fresh interpreter started in an
unrelated working directory, with and without ``DELTA_EXAMPLE_BASE``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = f"""
import json, sys
sys.path[:0] = [{str(ROOT / 'scripts')!r}, {str(ROOT / 'dags_examples')!r}]
import airflow_deploy, example_settings, run_example
print(json.dumps({{"dags": example_settings.BASE, "run_example": run_example.parse_args([]).base,
                   "airflow_deploy": airflow_deploy.parse_args(["up"]).base}}))
"""


def defaults(cwd: Path, base: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW__", "AIRFLOW_CONN_"))}
    env.pop("DELTA_EXAMPLE_BASE", None)
    if base is not None:
        env["DELTA_EXAMPLE_BASE"] = base
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=str(cwd), env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-5000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("base, expected", [(None, "repo"), ("elsewhere/tables", "cwd")])
def test_the_dags_and_the_scripts_default_to_the_same_tables(tmp_path, base, expected):
    found = defaults(tmp_path, base)
    want = str(ROOT / "example_output") if expected == "repo" else str(tmp_path / "elsewhere" / "tables")
    assert found == {"dags": want, "run_example": want, "airflow_deploy": want}
