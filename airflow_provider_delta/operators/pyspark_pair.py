"""``pyspark`` and ``pyspark-client`` installed side by side must be the same release.

Both distributions install into the same ``pyspark/`` folder: ``pyspark`` (Spark with its
JVM parts, a base dependency of this provider) and ``pyspark-client`` (the Spark Connect
client the Apache Spark provider depends on). Package metadata cannot tie two ranges
together, so a deployment's constraints may pin one and let the resolver take the newest
of the other; the folder then holds files of two releases, and Spark fails in ways that
name neither (an import error deep in ``pyspark.sql``, a protocol mismatch). The base
dependencies give both the same range (``pyproject.toml``); this check, run before a
Spark operator submits anything, turns a mixed install into one clear error.
"""
from __future__ import annotations

from importlib import metadata
from typing import Iterable

from airflow.providers.common.compat.sdk import AirflowFailException

from ..log import DeltaError

#: the two distributions that share the ``pyspark/`` folder
PAIR = ("pyspark", "pyspark-client")


class PySparkVersionMismatchError(DeltaError, AirflowFailException):
    """``pyspark`` and ``pyspark-client`` are installed in different versions (no retry: a retry
    meets the same installation)."""


def installed_versions(path: Iterable[str] | None = None) -> dict[str, str]:
    """The installed version of each of :data:`PAIR` that is installed (``path``: where to look,
    default ``sys.path``)."""
    found: dict[str, str] = {}
    for dist in metadata.distributions(**({"path": list(path)} if path is not None else {})):
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name in PAIR and name not in found:        # the first on the path is the one imported
            found[name] = dist.version
    return found


def require_matching_pyspark(path: Iterable[str] | None = None) -> None:
    """Raise :class:`PySparkVersionMismatchError`, naming both versions, when both are installed and differ."""
    versions = installed_versions(path)
    if len(versions) == len(PAIR) and len(set(versions.values())) > 1:
        raise PySparkVersionMismatchError(
            f"pyspark {versions['pyspark']} and pyspark-client {versions['pyspark-client']} are both installed; they "
            "share the pyspark/ folder and must be the same version. Install both at one version, e.g. "
            f"pip install \"pyspark=={versions['pyspark-client']}\" \"pyspark-client=={versions['pyspark-client']}\" "
            "(or pin both in your deployment's constraints)")
