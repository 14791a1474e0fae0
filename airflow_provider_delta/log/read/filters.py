"""Tuple filters ``(column, op, value)``: what they mean, for reads and OPTIMIZE's partition filters.

A filter is a list of atoms (AND) or a list of such lists (OR of ANDs). Atoms follow SQL's
three-valued logic, as Delta Spark evaluates a ``WHERE`` or ``OPTIMIZE ... WHERE`` predicate,
and a row or partition is selected only when its filter is *true*:

- ``=, ==, !=, <, <=, >, >=`` against a value: a null column value is unknown, never selected
  (``("p", "!=", "a")`` does not select the null partition: ``NULL <> 'a'`` is unknown);
- ``in`` / ``not in`` take a list, tuple or set of values; a null column value is never
  selected by either (``NULL NOT IN ('a')`` is unknown). A string is refused (it is one
  value, not a list of characters), and so is None inside the list: ``x IN (NULL)`` is
  never true in SQL, so a None there would silently match nothing;
- None selects nulls explicitly: ``("p", "is", None)`` / ``("p", "=", None)`` is
  ``p IS NULL`` (the null partition, ``__HIVE_DEFAULT_PARTITION__``), ``("p", "is not",
  None)`` / ``("p", "!=", None)`` is ``p IS NOT NULL``. ``=`` with None is read as ``IS``
  because SQL's ``= NULL`` is never true and a filter that can never match is a mistake;
  ``<`` and the other orderings with None are refused for the same reason.

Every atom is checked when the filter is read (:func:`normalize`), before any file is, so a
malformed filter is refused even on an empty table.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ..base import arrow_build as ab
from ..base import arrow_kernels as ak
from ..base.errors import InvalidArgumentError

#: comparison operators and their compute kernels
COMPARISONS = {"=": "equal", "==": "equal", "!=": "not_equal", "<": "less", "<=": "less_equal",
               ">": "greater", ">=": "greater_equal"}
#: operators taking a collection of values
MEMBERSHIP = ("in", "not in")
#: operators taking None only: SQL IS NULL / IS NOT NULL
NULL_TESTS = ("is", "is not")
#: with None, these mean IS NULL (True) or IS NOT NULL (False)
_NULL_MEANING = {"is": True, "=": True, "==": True, "is not": False, "!=": False}
OPERATORS = sorted(COMPARISONS) + list(MEMBERSHIP) + list(NULL_TESTS)
Dnf = list[list[tuple[str, str, Any]]]


def normalize(filter: Any) -> Dnf | None:
    """The filter as OR-of-AND lists of checked atoms; None for no filter or a ``pyarrow.compute.Expression``."""
    if filter is None or isinstance(filter, ak.Expression):
        return None
    if not isinstance(filter, (list, tuple)) or not filter:
        raise InvalidArgumentError("filter must be a list of (column, op, value) tuples, a list of such "
                                   "lists, or a pyarrow.compute.Expression")
    if isinstance(filter[0], tuple) and len(filter[0]) == 3 and isinstance(filter[0][0], str):
        branches = [list(filter)]
    else:
        branches = [list(conj) if isinstance(conj, (list, tuple)) else conj for conj in filter]
    for conj in branches:
        if not isinstance(conj, list) or not conj:
            raise InvalidArgumentError(f"filter branches are non-empty lists of (column, op, value) tuples, got {conj!r}")
        for atom in conj:
            check_atom(atom)
    return branches


def check_atom(atom: Any) -> None:
    """Refuse an atom that has no SQL meaning (see the module docstring) with a typed error."""
    if not (isinstance(atom, (tuple, list)) and len(atom) == 3 and isinstance(atom[0], str)):
        raise InvalidArgumentError(f"filter atoms are (column, op, value) tuples, got {atom!r}")
    column, op, value = atom
    if op not in COMPARISONS and op not in MEMBERSHIP and op not in NULL_TESTS:
        raise InvalidArgumentError(f"unsupported filter operator {op!r}; use one of {OPERATORS}")
    if value is None:
        if op not in _NULL_MEANING:
            raise InvalidArgumentError(
                f"filter ({column!r}, {op!r}, None) is never true (a comparison with NULL is unknown in SQL); "
                f"select nulls with ({column!r}, 'is', None) or non-nulls with ({column!r}, 'is not', None)")
        return
    if op in NULL_TESTS:
        raise InvalidArgumentError(f"filter ({column!r}, {op!r}, ...) takes None only (IS [NOT] NULL), got {value!r}")
    if op in MEMBERSHIP:
        if not isinstance(value, (list, tuple, set, frozenset)):
            hint = f" (one value? write [{value!r}])" if isinstance(value, (str, bytes)) else ""
            raise InvalidArgumentError(f"filter ({column!r}, {op!r}, ...) takes a list of values, got {value!r}{hint}")
        if any(v is None for v in value):
            raise InvalidArgumentError(
                f"filter ({column!r}, {op!r}, {value!r}): None in the list never matches (x IN (NULL) is unknown in "
                f"SQL); OR a branch with ({column!r}, 'is', None) to select nulls")


def atom_mask(col: pa.Array | pa.ChunkedArray, op: str, value: Any) -> Any:
    """Where the atom is true (false or null elsewhere) for the values of ``col``; the atom is checked."""
    typ = col.type
    if value is None:
        return ak.is_null(col) if _NULL_MEANING[op] else ak.is_valid(col)
    try:
        if op in MEMBERSHIP:
            vals = ak.cast(ab.array(list(value)), typ) if value else pa.nulls(0, typ)
            found = ak.is_in(col, vals)                      # a null value: false
            return ak.and_kleene(ak.invert(found), ak.is_valid(col)) if op == "not in" else found
        return ak.call(COMPARISONS[op], col, ak.cast(ab.scalar(value), typ))
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError) as e:
        raise InvalidArgumentError(f"filter value {value!r} cannot be compared with a {typ} column ({op}): {e}") \
            from None


def dnf_mask(dnf: Dnf, table: pa.Table, only: set[str] | None = None) -> Any:
    """Rows of ``table`` the filter keeps (true only: unknown is not kept), from the atoms on ``only``
    columns (all when None). Evaluated with compute kernels: a ``Table.filter(Expression)`` would load
    pyarrow.dataset, which imports pandas."""
    mask = None
    for conj in dnf:
        m = ab.from_numpy(np.ones(table.num_rows, dtype=bool))
        for col, op, value in conj:
            if only is None or col in only:
                if table.schema.get_field_index(col) < 0:
                    raise InvalidArgumentError(f"filter column {col!r} is not in the table schema")
                m = ak.and_kleene(m, ak.fill_null(atom_mask(table.column(col), op, value), ab.scalar(False)))
        mask = m if mask is None else ak.or_(mask, m)
    return mask
