"""Arrow compute kernels called by name, so the read path never imports ``pyarrow.compute``.

``import pyarrow.compute`` generates a Python wrapper with a parsed docstring for each
of Arrow's several hundred kernels: about 45 ms, a tenth of opening a 90,000-file table
from a cold process. The kernels themselves live in the compiled ``pyarrow._compute``
module (a few ms to load), and ``call_function`` reaches any of them by name. pyarrow's
own conveniences (``Array.filter``, ``.cast``, ``.take``, ``.is_valid``, ``.fill_null``,
``Table.filter``...) import ``pyarrow.compute`` on first use, so the modules a snapshot
loads call the functions here instead. Each one does what its namesake in
``pyarrow.compute`` does, with Arrow values as arguments (build scalars with
``arrow_build.scalar``: ``pa.scalar`` of a Python value can wake pandas).

``pyarrow._compute`` is pyarrow's own module behind ``pyarrow.compute`` (which
re-exports ``call_function``, ``Expression`` and every options class from it); if a
future pyarrow moved them, the public module is used instead.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Sequence

import pyarrow as pa

try:
    from pyarrow import _compute as _kernels
    _kernels.call_function, _kernels.Expression, _kernels.CastOptions  # noqa: B018 (the names this module needs)
except (ImportError, AttributeError):  # pragma: no cover - a pyarrow that reorganised its modules
    import pyarrow.compute as _kernels  # type: ignore[no-redef]

Expression = _kernels.Expression

ArrowData = Any  # an Array, ChunkedArray, Scalar, RecordBatch or Table


def call(name: str, *args: ArrowData, options: Any = None) -> ArrowData:
    """Kernel ``name`` on ``args``: ``pyarrow.compute.call_function`` without the module."""
    return _kernels.call_function(name, list(args), options)


def filter(data: ArrowData, mask: ArrowData) -> ArrowData:  # noqa: A001 (pyarrow's name)
    """Rows of ``data`` (array or table) where ``mask`` is true; null counts as false."""
    return call("filter", data, mask, options=_kernels.FilterOptions("drop"))


def filter_each(pairs: Sequence[tuple[ArrowData, ArrowData]]) -> list[ArrowData]:
    """``filter(data, mask)`` of every pair, the pairs spread over the machine's cores.

    A kernel call runs on one core and releases the GIL; replay filters each chunk of a
    parsed log (copying its strings, the bulk of a cold read after the parse), so with
    several cores the chunks are filtered side by side. Threads, not a pool: nothing
    is imported for it and no thread outlives the call.
    """
    workers = min(len(pairs), os.cpu_count() or 1)
    if workers <= 1:
        return [filter(d, m) for d, m in pairs]
    out: list[Any] = [None] * len(pairs)
    errors: list[BaseException] = []

    def work(first: int) -> None:
        try:
            for i in range(first, len(pairs), workers):
                out[i] = filter(*pairs[i])
        except BaseException as e:  # re-raised in the caller's thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(w,), daemon=True) for w in range(1, workers)]
    for t in threads:
        t.start()
    work(0)
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return out


def take(data: ArrowData, indices: ArrowData) -> ArrowData:
    """Rows of ``data`` (array or table) at ``indices``."""
    return call("take", data, indices, options=_kernels.TakeOptions(boundscheck=True))


def cast(data: ArrowData, target: pa.DataType, safe: bool = True) -> ArrowData:
    """``data`` as ``target``; a value that does not fit raises unless ``safe`` is false."""
    options = _kernels.CastOptions.safe(target) if safe else _kernels.CastOptions.unsafe(target)
    return call("cast", data, options=options)


def is_valid(data: ArrowData) -> ArrowData:
    return call("is_valid", data)


def is_null(data: ArrowData) -> ArrowData:
    return call("is_null", data, options=_kernels.NullOptions(nan_is_null=False))


def invert(mask: ArrowData) -> ArrowData:
    return call("invert", mask)


def and_(a: ArrowData, b: ArrowData) -> ArrowData:
    return call("and", a, b)


def and_kleene(a: ArrowData, b: ArrowData) -> ArrowData:
    return call("and_kleene", a, b)


def or_(a: ArrowData, b: ArrowData) -> ArrowData:
    return call("or", a, b)


def fill_null(data: ArrowData, fill: pa.Scalar | pa.Array | pa.ChunkedArray) -> ArrowData:
    """``data`` with nulls replaced by ``fill`` (cast to ``data``'s type like pyarrow does)."""
    if isinstance(fill, pa.Scalar) and fill.type != data.type:
        fill = cast(fill, data.type)
    return call("coalesce", data, fill)


def if_else(cond: ArrowData, left: ArrowData, right: ArrowData) -> ArrowData:
    return call("if_else", cond, left, right)


def indices_nonzero(mask: ArrowData) -> ArrowData:
    return call("indices_nonzero", mask)


def is_in(data: ArrowData, value_set: pa.Array) -> ArrowData:
    """Whether each value is in ``value_set`` (a null matches a null, as in pyarrow)."""
    return call("is_in", data, options=_kernels.SetLookupOptions(value_set, skip_nulls=False))


def index_in(data: ArrowData, value_set: pa.Array) -> ArrowData:
    """The index in ``value_set`` of each value, null when absent."""
    return call("index_in", data, options=_kernels.SetLookupOptions(value_set, skip_nulls=False))


def any_true(mask: ArrowData) -> bool:
    """Whether any value is true (nulls skipped; False for none)."""
    return bool(call("any", mask, options=_kernels.ScalarAggregateOptions(skip_nulls=True, min_count=1)).as_py())


def sum_of(data: ArrowData) -> Any:
    """The sum of the values as a Python number (None for no values)."""
    return call("sum", data, options=_kernels.ScalarAggregateOptions(skip_nulls=True, min_count=1)).as_py()


def min_max(data: ArrowData) -> pa.StructScalar:
    """Struct scalar ``{min, max}`` of the non-null values."""
    return call("min_max", data, options=_kernels.ScalarAggregateOptions(skip_nulls=True, min_count=1))


def min_of(data: ArrowData) -> Any:
    """The smallest non-null value as a Python value (None for none)."""
    return call("min", data, options=_kernels.ScalarAggregateOptions(skip_nulls=True, min_count=1)).as_py()


def unique(data: ArrowData) -> pa.Array:
    return call("unique", data)


def dictionary_encode(data: ArrowData, null_encoding: str = "mask") -> ArrowData:
    """``null_encoding="encode"``: nulls get a dictionary entry of their own (a code, not a null)."""
    return call("dictionary_encode", data, options=_kernels.DictionaryEncodeOptions(null_encoding))


def count_distinct(data: ArrowData) -> int:
    """How many distinct non-null values ``data`` holds."""
    return call("count_distinct", data, options=_kernels.CountOptions("only_valid")).as_py()


def struct_field(data: ArrowData, name: str) -> ArrowData:
    """The child ``name`` of a struct column, null where the struct is."""
    return call("struct_field", data, options=_kernels.StructFieldOptions(name))


def equal(a: ArrowData, b: ArrowData) -> ArrowData:
    return call("equal", a, b)


def greater(a: ArrowData, b: ArrowData) -> ArrowData:
    return call("greater", a, b)


def is_nan(data: ArrowData) -> ArrowData:
    return call("is_nan", data)


def match_substring(data: ArrowData, pattern: str) -> ArrowData:
    return call("match_substring", data, options=_kernels.MatchSubstringOptions(pattern))


def match_substring_regex(data: ArrowData, pattern: str) -> ArrowData:
    return call("match_substring_regex", data, options=_kernels.MatchSubstringOptions(pattern))


def starts_with(data: ArrowData, prefix: str) -> ArrowData:
    return call("starts_with", data, options=_kernels.MatchSubstringOptions(prefix))


def replace_substring(data: ArrowData, pattern: str, replacement: str) -> ArrowData:
    return call("replace_substring", data, options=_kernels.ReplaceSubstringOptions(pattern, replacement))


def replace_substring_regex(data: ArrowData, pattern: str, replacement: str) -> ArrowData:
    return call("replace_substring_regex", data, options=_kernels.ReplaceSubstringOptions(pattern, replacement))


def coalesce(*values: ArrowData) -> ArrowData:
    """The first non-null value of each position."""
    return call("coalesce", *values)


def utf8_lower(data: ArrowData) -> ArrowData:
    return call("utf8_lower", data)


def replace_with_mask(data: ArrowData, mask: ArrowData, replacements: ArrowData) -> ArrowData:
    return call("replace_with_mask", data, mask, replacements)


def join_element_wise(*parts: ArrowData, separator: pa.Scalar) -> ArrowData:
    """Strings joined position by position with ``separator``; null where any part is null."""
    return call("binary_join_element_wise", *parts, separator)


def map_lookup(data: ArrowData, key: pa.Scalar, occurrence: str = "first") -> ArrowData:
    return call("map_lookup", data, options=_kernels.MapLookupOptions(key, occurrence))
