"""Transforms: the user code a Spark job runs between reading and committing.

A transform is ``func(spark, source, **params) -> DataFrame``: ``source`` is the
pinned input (None when the job has no input, e.g. an ingest that generates or
fetches its data) and ``params`` are the JSON parameters of the task. It is named
either by a builtin name below or as ``package.module:function`` importable on
the driver (ship it with ``py_files``). Transforms must be deterministic for a
given input and parameters: a retried task recomputes the same result.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Callable

from ..log import InvalidArgumentError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

Transform = Callable[..., "DataFrame"]


def identity(spark: "SparkSession", source: "DataFrame | None", columns: list[str] | None = None,
             where: str | None = None) -> "DataFrame":
    """Copy the input (optionally a column subset and a SQL filter): snapshot materialization."""
    if source is None:
        raise InvalidArgumentError("the 'identity' transform needs an input (manifest or table)")
    df = source
    if where:
        df = df.where(where)
    if columns:
        df = df.select(*columns)
    return df


def sql(spark: "SparkSession", source: "DataFrame | None", query: str = "", view: str = "source") -> "DataFrame":
    """Run a Spark SQL ``query``; the input is registered as the temporary view ``view``."""
    if not query:
        raise InvalidArgumentError("the 'sql' transform needs a 'query' parameter")
    if source is not None:
        source.createOrReplaceTempView(view)
    return spark.sql(query)


BUILTINS: dict[str, Transform] = {"identity": identity, "sql": sql}


def resolve(name: str) -> Transform:
    """The transform called ``name``: a builtin, or ``package.module:function``."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgumentError("a transform name is required")
    if name in BUILTINS:
        return BUILTINS[name]
    module_name, sep, attr = name.partition(":")
    if not sep or not module_name or not attr:
        raise InvalidArgumentError(
            f"unknown transform {name!r}: use one of {sorted(BUILTINS)} or 'package.module:function'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise InvalidArgumentError(f"transform module {module_name!r} cannot be imported on the Spark driver "
                                   f"({e}); ship it with py_files or install it") from None
    func: Any = module
    for part in attr.split("."):
        func = getattr(func, part, None)
        if func is None:
            raise InvalidArgumentError(f"transform {name!r}: {module_name} has no attribute {attr!r}")
    if not callable(func):
        raise InvalidArgumentError(f"transform {name!r} is not callable")
    return func
