"""Review s12 (report-only) of the docs (#26): the README's two commands on the Python it names.

README.md: "On a fresh machine with Python >= 3.10 ... make test # ... runs the test suite" (and
pyproject.toml says requires-python >= 3.10). The suite must then at least import on 3.10: a module of the
standard library added in 3.11 makes collection fail there (pytest stops with an import error, and
``make test`` / CI fail before a test runs).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: standard-library modules that Python 3.10 does not have (added in 3.11)
NEW_IN_311 = {"tomllib", "wsgiref.types"}


def _floor() -> tuple[int, int]:
    m = re.search(r"Python >= 3\.(\d+)", (ROOT / "README.md").read_text())
    assert m, "the README names the Python it needs"
    return 3, int(m.group(1))


def _unguarded_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    names = set()
    for node in tree.body:                       # module level, outside try/if (no fallback)
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_the_suite_and_package_import_on_the_readmes_python_floor():
    """The floor (3.11 now: the tested dependencies and datetime.fromisoformat need it) is one: the README, the
    getting-started page and pyproject's requires-python name the same one, and nothing imports a module
    the floor lacks."""
    floor = _floor()
    getting_started = re.search(r"Python >= 3\.(\d+)", (ROOT / "docs" / "getting-started.md").read_text())
    requires = re.search(r'requires-python = ">=3\.(\d+)"', (ROOT / "pyproject.toml").read_text())
    assert getting_started and requires
    assert (3, int(getting_started.group(1))) == (3, int(requires.group(1))) == floor
    if floor >= (3, 11):
        return
    offenders = {}
    for folder in ("airflow_provider_delta", "tests", "dags_examples", "scripts"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            bad = _unguarded_imports(path) & NEW_IN_311
            if bad:
                offenders[str(path.relative_to(ROOT))] = sorted(bad)
    assert offenders == {}
