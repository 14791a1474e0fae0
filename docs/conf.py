"""Sphinx configuration of the airflow-provider-delta documentation site.

Built by ``make docs`` (and in CI by ``tests/docs/test_site.py``) with warnings as errors, so a
broken cross-reference, a missing page or an include whose marker moved fails the build.
Pages are Markdown (MyST); the API reference is generated from the package's docstrings.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import airflow_provider_delta  # noqa: E402  (the version shown is the package's own)

project = "airflow-provider-delta"
author = "airflow-provider-delta developers"
release = airflow_provider_delta.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.viewcode",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 4

autodoc_member_order = "bysource"
autodoc_typehints = "none"          # signatures carry them; the docstrings say why, not what type
autodoc_default_options = {"members": True, "show-inheritance": False}

html_theme = "furo"
html_title = f"airflow-provider-delta {release}"
html_static_path: list[str] = []
