"""Every Python snippet of the documentation runs, page by page, so examples never rot.

Each page runs in its own interpreter, in an empty directory, with a throw-away Airflow
home (DAG snippets build their DAGs and operators; nothing is scheduled). See
``snippets.py`` for the two comments that add hidden set-up or skip a block.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from snippets import SnippetSyntaxError, page_snippets

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts] + [ROOT / "README.md"])
RUNNER = Path(__file__).with_name("run_page.py")


def _id(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", [p for p in PAGES if any(s.shown for s in page_snippets(p))], ids=_id)
def test_page_snippets_run(page, tmp_path):
    home = tmp_path / "airflow-home"
    home.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "AIRFLOW_HOME": str(home), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
           "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, str(RUNNER), str(page)], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-6000:]


def test_the_runner_reads_markers(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("text\n<!-- snippet-setup\nx = 1\n-->\n```python\ny = x + 1\n```\n"
                    "<!-- snippet: skip (needs a cluster) -->\n```python\nraise SystemExit\n```\n"
                    "```bash\nls\n```\n")
    got = [(s.code, s.shown) for s in page_snippets(page)]
    assert got == [("x = 1", False), ("y = x + 1", True)]


def test_a_skip_needs_a_reason(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("<!-- snippet: skip -->\n```python\npass\n```\n")
    with pytest.raises(SnippetSyntaxError):
        page_snippets(page)


@pytest.mark.parametrize("exit_call", ["raise SystemExit(0)", "import sys; sys.exit()", "exit(0)"])
def test_a_snippet_that_exits_fails_its_page(tmp_path, exit_call):
    page = tmp_path / "p.md"
    page.write_text(f"```python\nx = 1\n```\n\n```python\n{exit_call}\n```\n\n```python\nprint('never reached')\n```\n")
    proc = subprocess.run([sys.executable, str(RUNNER), str(page)], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert "p.md:6: the snippet starting here failed" in proc.stderr and "SystemExit" in proc.stderr
    assert "never reached" not in proc.stdout


def test_a_failing_snippet_fails_its_page(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("```python\nassert 1 == 2, 'wrong'\n```\n")
    proc = subprocess.run([sys.executable, str(RUNNER), str(page)], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 1 and "p.md:2" in proc.stderr and "wrong" in proc.stderr
