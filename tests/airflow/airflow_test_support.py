"""Paths and the subprocess environment of the Airflow integration tests (shared helpers).

No ``__init__.py`` in this folder on purpose: a package named ``airflow`` under
``tests/`` would shadow the real Airflow package.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DAGS = HERE / "dags"
RUNNER = HERE / "dag_runner.py"
PYTHON = sys.executable
AIRFLOW_BIN = str(Path(sys.executable).with_name("airflow"))
REPORT_MARK = "@@DAG_TEST_REPORT@@"


def example_dag_folder(tmp_path: Path, dag_file: str, base: Path) -> tuple[Path, dict[str, str]]:
    """A DAG folder holding ``dags_examples/<dag_file>`` and ``example_settings.py``, and the
    environment that runs it on the tables under ``base`` (``DELTA_EXAMPLE_BASE``; the DAG
    folder first on ``PYTHONPATH``, this process's path, with the package under test, after it)."""
    dags = tmp_path / "dags"
    dags.mkdir()
    for name in (dag_file, "example_settings.py"):
        shutil.copy(HERE.parents[1] / "dags_examples" / name, dags / name)
    env = {"DELTA_EXAMPLE_BASE": str(base),
           "PYTHONPATH": os.pathsep.join(p for p in (str(dags), os.environ.get("PYTHONPATH")) if p)}
    return dags, env


def load_script(name: str):
    """scripts/<name>.py as a module (the scripts folder is not a package); imported once."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HERE.parents[1] / "scripts" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


#: the deployment script of `make airflow-up`: its process and database machinery serves the tests too
airflow_deploy = load_script("airflow_deploy")


def airflow_env(home: Path, dags_folder: Path | None = None, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment of an Airflow subprocess with its own home and SQLite database."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW__", "AIRFLOW_CONN_"))}
    env.update({
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder or DAGS),
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
        "PYTHONUNBUFFERED": "1",
    })
    env.update(extra or {})
    return env
