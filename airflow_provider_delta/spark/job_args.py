"""The arguments of the Spark entry point (:mod:`.job`), as one JSON document.

The Airflow operator builds a :class:`JobSpec` and passes its JSON as the single
application argument of ``spark-submit``; secrets (storage credentials, the
commit owner's database URL) travel separately in the environment variable
:data:`SECRETS_ENV`, so they appear neither on the command line nor in the
task's rendered fields. This module has no Spark and no Airflow import, so both
sides share it.

Document (``input`` optional; ``transform`` required)::

    {"input": {"manifest_uri": "..."} | {"table_uri": "...", "version": 3},
                                               # + "starting_version": 2 for the changes of 2..3
     "output": {"table_uri": "...", "mode": "append", "partition_by": ["day"],
                "properties": {...}},
     "app_id": "dag:task@<run key>", "app_version": 1767225600,
     "transform": "package.module:function" | "<builtin name>",
     "params": {...},                          # keyword arguments of the transform
     "job": {"dag_id": ..., "task_id": ..., "run_id": ..., "try_number": ...},
     "transaction": {"id": "<group id>", "writer": "dag:task"}}   # optional: stage into a catalog group

With ``transaction`` the output is a catalog-managed table and the job stages its commit into
that multi-table transaction of the catalog (the ``catalog`` secret of the output side) instead
of committing it (:mod:`.group_write`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..log import InvalidArgumentError
from .delta_job import env_json_object
from .exactly_once import check_app

SECRETS_ENV = "DELTA_SPARK_JOB_SECRETS"
RESULT_MARK = "DELTA_SPARK_JOB_RESULT "


@dataclass
class JobSpec:
    output_table_uri: str
    transform: str
    mode: str = "append"
    partition_by: list[str] | None = None
    properties: dict[str, str] | None = None
    input_manifest_uri: str | None = None
    input_table_uri: str | None = None
    input_version: int | None = None
    app_id: str | None = None
    app_version: int | None = None
    params: dict[str, Any] = field(default_factory=dict)
    job: dict[str, Any] | None = None
    #: incremental jobs: the input is the change feed of versions input_starting_version..input_version
    input_starting_version: int | None = None
    #: a multi-table transaction of the output's catalog to stage the commit into (write-audit-publish)
    transaction_id: str | None = None
    #: the try-independent key of the writer (a retry finds its staged commit)
    writer: str | None = None

    def validate(self) -> "JobSpec":
        if not isinstance(self.output_table_uri, str) or not self.output_table_uri.strip():
            raise InvalidArgumentError("output.table_uri is required")
        if not isinstance(self.transform, str) or not self.transform.strip():
            raise InvalidArgumentError("transform is required: a builtin name or 'package.module:function'")
        if self.input_manifest_uri is not None and self.input_table_uri is not None:
            raise InvalidArgumentError("give the input as a manifest_uri or a table_uri, not both")
        if self.input_version is not None and self.input_table_uri is None:
            raise InvalidArgumentError("input.version needs input.table_uri")
        if self.input_version is not None and (isinstance(self.input_version, bool) or
                                               not isinstance(self.input_version, int) or self.input_version < 0):
            raise InvalidArgumentError(f"input.version must be a non-negative integer, got {self.input_version!r}")
        if self.input_starting_version is not None and (
                self.input_table_uri is None or self.input_version is None or isinstance(self.input_starting_version, bool)
                or not isinstance(self.input_starting_version, int) or self.input_starting_version < 0):
            raise InvalidArgumentError("input.starting_version must be a non-negative integer, with input.table_uri "
                                       f"and input.version; got {self.input_starting_version!r}")
        if not isinstance(self.params, dict):
            raise InvalidArgumentError("params must be a JSON object")
        if self.partition_by is not None and (not isinstance(self.partition_by, list)
                                              or not all(isinstance(c, str) for c in self.partition_by)):
            raise InvalidArgumentError("output.partition_by must be a list of column names")
        if self.transaction_id is not None and (not isinstance(self.transaction_id, str) or not self.transaction_id):
            raise InvalidArgumentError(f"transaction.id must be a non-empty string, got {self.transaction_id!r}")
        if self.writer is not None and not isinstance(self.writer, str):
            raise InvalidArgumentError(f"transaction.writer must be a string, got {self.writer!r}")
        check_app(self.app_id, self.app_version)
        return self

    @property
    def incremental(self) -> bool:
        """Whether the input is a range of changes rather than a snapshot."""
        return self.input_starting_version is not None

    @property
    def has_input(self) -> bool:
        return self.input_manifest_uri is not None or self.input_table_uri is not None

    def to_document(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "output": {"table_uri": self.output_table_uri, "mode": self.mode},
            "transform": self.transform, "params": self.params,
            "app_id": self.app_id, "app_version": self.app_version, "job": self.job}
        if self.partition_by is not None:
            doc["output"]["partition_by"] = list(self.partition_by)
        if self.properties:
            doc["output"]["properties"] = dict(self.properties)
        if self.input_manifest_uri is not None:
            doc["input"] = {"manifest_uri": self.input_manifest_uri}
        elif self.input_table_uri is not None:
            doc["input"] = {"table_uri": self.input_table_uri, "version": self.input_version}
            if self.incremental:
                doc["input"]["starting_version"] = self.input_starting_version
        if self.transaction_id is not None:
            doc["transaction"] = {"id": self.transaction_id, "writer": self.writer}
        return doc

    def to_json(self) -> str:
        return json.dumps(self.to_document(), separators=(",", ":"), default=str)

    @classmethod
    def from_document(cls, doc: Any) -> "JobSpec":
        if not isinstance(doc, dict):
            raise InvalidArgumentError("the job arguments must be a JSON object")
        out = doc.get("output")
        if not isinstance(out, dict):
            raise InvalidArgumentError("the job arguments need an 'output' object with 'table_uri'")
        inp = doc.get("input") or {}
        if not isinstance(inp, dict):
            raise InvalidArgumentError("'input' must be an object with 'manifest_uri' or 'table_uri'")
        group = doc.get("transaction") or {}
        if not isinstance(group, dict):
            raise InvalidArgumentError("'transaction' must be an object with 'id' (and 'writer')")
        return cls(output_table_uri=out.get("table_uri"), transform=doc.get("transform"),
                   mode=out.get("mode", "append"), partition_by=out.get("partition_by"),
                   properties=out.get("properties"), input_manifest_uri=inp.get("manifest_uri"),
                   input_table_uri=inp.get("table_uri"), input_version=inp.get("version"),
                   app_id=doc.get("app_id"), app_version=doc.get("app_version"),
                   params=doc.get("params") or {}, job=doc.get("job"),
                   input_starting_version=inp.get("starting_version"), transaction_id=group.get("id"),
                   writer=group.get("writer")).validate()

    @classmethod
    def parse(cls, text: str) -> "JobSpec":
        """From the command-line argument: JSON text, or ``@path`` of a JSON file."""
        return cls.from_document(load_argument(text))


def load_argument(text: str, what: str = "the job arguments") -> Any:
    """A job's one command-line argument as JSON: the text itself, or ``@path`` of a JSON file."""
    if text.startswith("@"):
        with open(text[1:], encoding="utf-8") as f:
            text = f.read()
    try:
        return json.loads(text)
    except ValueError as e:
        raise InvalidArgumentError(f"{what} are not valid JSON: {e}") from None


def table_job_arguments(text: str, job: str, optional_keys: Iterable[str]) -> dict[str, Any]:
    """The argument document of a job on one table (checkpoint, optimize): a JSON object (or ``@file``)
    with a non-empty ``table_uri`` and no keys but ``optional_keys``; the job checks their values."""
    doc = load_argument(text, f"the {job} job's arguments")
    if not isinstance(doc, dict) or not isinstance(doc.get("table_uri"), str) or not doc["table_uri"].strip():
        raise InvalidArgumentError(f"the {job} job needs a JSON object with a 'table_uri'")
    unknown = set(doc) - {"table_uri", *optional_keys}
    if unknown:
        raise InvalidArgumentError(f"unknown {job} job argument(s): {sorted(unknown)}")
    return doc


def read_secrets(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """``{"input": {...}, "output": {...}}`` with storage_options / commit_owner per side, from the env."""
    return env_json_object(SECRETS_ENV, environ, InvalidArgumentError)
