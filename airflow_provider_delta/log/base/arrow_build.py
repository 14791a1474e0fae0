"""Arrow arrays and scalars from Python or numpy values, without waking pandas.

The first time ``pa.array`` or ``pa.scalar`` meets a Python sequence or a numpy
array (so also ``pc.fill_null(x, False)``, ``pc.greater(x, 5)``, ``pa.table`` of
lists), pyarrow imports pandas to ask whether the value is one of its types; so do
``to_numpy`` and ``pq.read_table``. That import costs about 0.4 s, more than
reading the log of a 90,000-file table, and every task process, reschedule poke or
trigger start would pay it. The builders here assemble arrays from Arrow buffers,
which never ask.

Values of the common shapes (bool, integers, floats, strings, binary, structs,
maps and lists of those, ``None`` for null) take that route; anything else (a
datetime, a ``Decimal``, a value of the wrong Python type) goes to ``pa.array``
unchanged, so results and errors stay exactly pyarrow's.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from . import arrow_kernels as ak

_INT_TYPES = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64,
              pa.uint8(): np.uint8, pa.uint16(): np.uint16, pa.uint32(): np.uint32, pa.uint64(): np.uint64}
_FLOAT_TYPES = {pa.float32(): np.float32, pa.float64(): np.float64}
_NUMPY_TYPES = {np.dtype(v): k for k, v in {**_INT_TYPES, **_FLOAT_TYPES}.items()}


class _Unbuildable(Exception):
    """A value outside the shapes built here: hand the whole sequence to ``pa.array``."""


def from_numpy(values: np.ndarray) -> pa.Array:
    """A 1-D numeric or boolean numpy array as an Arrow array (no nulls)."""
    values = np.ascontiguousarray(values)
    if values.dtype == np.bool_:
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, _bitmap(values)])
    type_ = _NUMPY_TYPES.get(values.dtype)
    if type_ is None:
        raise TypeError(f"no Arrow type for numpy dtype {values.dtype}")
    return pa.Array.from_buffers(type_, len(values), [None, pa.py_buffer(values)])


def to_numpy(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The values of a numeric Arrow array without nulls as numpy (zero-copy for one chunk)."""
    if isinstance(array, pa.ChunkedArray):
        parts = [to_numpy(c) for c in array.chunks]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=_dtype_of(array.type))
    if array.null_count:
        raise ValueError("to_numpy takes arrays without nulls")
    if pa.types.is_boolean(array.type):
        bits = np.frombuffer(array.buffers()[1], dtype=np.uint8)
        return np.unpackbits(bits, bitorder="little", count=array.offset + len(array))[array.offset:].astype(bool)
    dtype = _dtype_of(array.type)
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * dtype.itemsize)


def _dtype_of(type_: pa.DataType) -> np.dtype:
    np_type = _INT_TYPES.get(type_) or _FLOAT_TYPES.get(type_)
    if np_type is None:
        raise TypeError(f"to_numpy takes integer or float arrays, not {type_}")
    return np.dtype(np_type)


def scalar(value: Any, type_: pa.DataType | None = None) -> pa.Scalar:
    """``pa.scalar(value, type_)``, built as a one-element array."""
    return array([value], type_)[0]


def array(values: Sequence[Any], type_: pa.DataType | None = None) -> pa.Array:
    """``pa.array(values, type_)``: through Arrow buffers when every value has a plain shape.

    Without a type, plain values infer as pyarrow would: bool, int64, double (ints and
    floats mixed), string, binary, or null when every value is None.
    """
    values = values if isinstance(values, list) else list(values)
    target = type_ if type_ is not None else _infer(values)
    try:
        if target is not None:
            return _build(values, target)
    except _Unbuildable:
        pass
    return pa.array(values, type_)


_PLAIN_TYPES = {bool: pa.bool_(), int: pa.int64(), float: pa.float64(), str: pa.string(), bytes: pa.binary()}


def _infer(values: list[Any]) -> pa.DataType | None:
    kinds = {type(v) for v in values if v is not None}
    if not kinds:
        return pa.null()
    if kinds == {int, float}:
        return pa.float64()
    return _PLAIN_TYPES.get(kinds.pop()) if len(kinds) == 1 else None


def _bitmap(flags: np.ndarray) -> pa.Buffer:
    return pa.py_buffer(np.packbits(flags.astype(np.bool_, copy=False), bitorder="little"))


def _validity(values: list[Any]) -> tuple[pa.Buffer | None, np.ndarray | None]:
    """(validity bitmap or None when nothing is null, the boolean null mask or None)."""
    if not any(v is None for v in values):
        return None, None
    nulls = np.fromiter((v is None for v in values), dtype=np.bool_, count=len(values))
    return _bitmap(~nulls), nulls


def with_validity(arr: pa.Array, valid: pa.Array | np.ndarray | None) -> pa.Array:
    """``arr`` with null in the rows where ``valid`` (boolean, no nulls) is false.

    pyarrow's ``from_arrays(..., mask=)`` inverts the mask with a compute kernel, which
    imports ``pyarrow.compute`` (see ``arrow_kernels``); a struct takes the validity
    bitmap as it is stored instead, a list or map one kernel call.
    """
    if valid is None:
        return arr
    if pa.types.is_struct(arr.type):
        if isinstance(valid, pa.Array) and valid.offset == 0:
            bitmap = valid.buffers()[1]           # a boolean array's values are the bitmap itself
        else:
            bitmap = _bitmap(valid if isinstance(valid, np.ndarray) else to_numpy(valid))
        children = [arr.field(i) for i in range(arr.type.num_fields)]
        return pa.Array.from_buffers(arr.type, len(arr), [bitmap], children=children)
    flags = valid if isinstance(valid, pa.Array) else from_numpy(valid)
    return ak.if_else(flags, arr, pa.nulls(1, arr.type)[0])


def _valid_flags(nulls: np.ndarray | None) -> np.ndarray | None:
    return None if nulls is None else ~nulls


def _build(values: list[Any], t: pa.DataType) -> pa.Array:
    n = len(values)
    if pa.types.is_null(t):
        if any(v is not None for v in values):
            raise _Unbuildable
        return pa.nulls(n)
    if pa.types.is_boolean(t):
        if any(v is not None and type(v) is not bool for v in values):
            raise _Unbuildable
        validity, _ = _validity(values)
        bits = np.fromiter((v is True for v in values), dtype=np.bool_, count=n)
        return pa.Array.from_buffers(t, n, [validity, _bitmap(bits)])
    if t in _INT_TYPES or t in _FLOAT_TYPES:
        return _numbers(values, t)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or \
            pa.types.is_large_binary(t):
        return _strings(values, t)
    if pa.types.is_struct(t):
        return _structs(values, t)
    if pa.types.is_map(t):
        return _maps(values, t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _lists(values, t)
    raise _Unbuildable


def _numbers(values: list[Any], t: pa.DataType) -> pa.Array:
    is_int = t in _INT_TYPES
    ok = (int,) if is_int else (int, float)
    if any(v is not None and (type(v) not in ok) for v in values):
        raise _Unbuildable
    validity, _ = _validity(values)
    dtype = np.dtype(_INT_TYPES[t] if is_int else _FLOAT_TYPES[t])
    filled = [0 if v is None else v for v in values]
    try:
        if is_int:
            wide = np.array(filled, dtype=np.uint64 if t == pa.uint64() else np.int64)
            info = np.iinfo(dtype)
            if len(wide) and (wide.min() < info.min or wide.max() > info.max):
                raise _Unbuildable
            data = wide.astype(dtype)
        else:
            data = np.array(filled, dtype=dtype)
    except (OverflowError, ValueError, TypeError):
        raise _Unbuildable from None
    return pa.Array.from_buffers(t, len(values), [validity, pa.py_buffer(data)])


def _strings(values: list[Any], t: pa.DataType) -> pa.Array:
    text = pa.types.is_string(t) or pa.types.is_large_string(t)
    encoded: list[bytes] = []
    for v in values:
        if v is None:
            encoded.append(b"")
        elif type(v) is str and text:
            encoded.append(v.encode("utf-8"))
        elif type(v) is bytes and not text:
            encoded.append(v)
        else:
            raise _Unbuildable
    validity, _ = _validity(values)
    lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    if not large and offsets[-1] >= 2 ** 31:
        raise _Unbuildable
    offsets = offsets if large else offsets.astype(np.int32)
    return pa.Array.from_buffers(t, len(values), [validity, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))])


def _structs(values: list[Any], t: pa.StructType) -> pa.Array:
    if any(v is not None and not isinstance(v, dict) for v in values):
        raise _Unbuildable
    _, nulls = _validity(values)
    fields = [t.field(i) for i in range(t.num_fields)]
    children = [_build([None if v is None else v.get(f.name) for v in values], f.type) for f in fields]
    return with_validity(pa.StructArray.from_arrays(children, fields=fields), _valid_flags(nulls))


def _entries(v: Any) -> list[Any]:
    if isinstance(v, dict):
        return list(v.items())
    if isinstance(v, list) and all(isinstance(p, tuple) and len(p) == 2 for p in v):
        return v
    raise _Unbuildable


def _offsets(lengths: list[int]) -> pa.Array:
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(np.asarray(lengths, dtype=np.int64), out=offsets[1:])
    if offsets[-1] >= 2 ** 31:
        raise _Unbuildable
    return from_numpy(offsets.astype(np.int32))


def _maps(values: list[Any], t: pa.MapType) -> pa.Array:
    _, nulls = _validity(values)
    pairs = [[] if v is None else _entries(v) for v in values]
    keys = _build([k for p in pairs for k, _ in p], t.key_type)
    items = _build([x for p in pairs for _, x in p], t.item_type)
    return with_validity(pa.MapArray.from_arrays(_offsets([len(p) for p in pairs]), keys, items, type=t),
                         _valid_flags(nulls))


def _lists(values: list[Any], t: pa.DataType) -> pa.Array:
    if any(v is not None and not isinstance(v, (list, tuple)) for v in values):
        raise _Unbuildable
    _, nulls = _validity(values)
    lists = [() if v is None else v for v in values]
    flat = _build([x for v in lists for x in v], t.value_type)
    offsets = _offsets([len(v) for v in lists])
    if pa.types.is_large_list(t):
        offsets = ak.cast(offsets, pa.int64())
    cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
    return with_validity(cls.from_arrays(offsets, flat, type=t), _valid_flags(nulls))


def empty_table(schema: pa.Schema) -> pa.Table:
    """``schema.empty_table()``, which also goes through pandas' type checks."""
    return pa.Table.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)
