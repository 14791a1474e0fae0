"""Why a connection set in an ``AIRFLOW_CONN_<ID>`` variable cannot be used.

Airflow logs a warning for a connection variable that does not parse and then
reports the connection as "not defined", which sends users looking for a missing
connection instead of a typo in one. The hook asks here first, so its error
names the variable and the parse error (never the value, which holds secrets).
"""
from __future__ import annotations

import os

from airflow.sdk import Connection


def env_variable(conn_id: str) -> str:
    return f"AIRFLOW_CONN_{conn_id.upper()}"


def unparsable_env_connection(conn_id: str) -> str | None:
    """A message if ``conn_id`` is set in the environment but does not parse; None otherwise."""
    name = env_variable(conn_id)
    raw = os.environ.get(name)
    if raw is None:
        return None
    try:
        if raw.lstrip().startswith("{"):
            Connection.from_json(raw, conn_id=conn_id)
        else:
            Connection.from_uri(raw, conn_id=conn_id)
    except Exception as e:   # whatever the parser raises is the answer we report
        return (f"Airflow connection {conn_id!r} is set in {name} but does not parse "
                f"({type(e).__name__}: {e}); fix the URI or JSON there")
    return None
