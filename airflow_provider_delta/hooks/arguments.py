"""Task arguments after rendering: typed values, or an error that fails the task without a retry.

Every argument of the Delta operators and the sensor is templated, and a ``@task`` hands
the hook (:class:`~.delta_table.DeltaTableHook`) values from ``dag_run.conf`` or params,
so what reaches ``execute`` or a hook method may be a Python value or the text a template
rendered to:
``"{{ dag_run.conf.get('dry_run') }}"`` without conf renders ``"None"`` (or ``None``
with ``render_template_as_native_obj=True``), ``"{{ params.enforce }}"`` renders
``"False"``. A flag read by Python truthiness turns both into the wrong answer (the
non-empty string ``"None"`` is true, ``"False"`` too); for ``dry_run`` that answer
deletes files. So every flag goes through :func:`flag`, which knows exactly
two spellings of each answer and refuses everything else, before the task touches a
table. The module sits in the hooks tier so the hook's own deleting methods (vacuum,
metadata cleanup) parse their flags the same way as the operators above them.

A value that cannot mean anything is the DAG's fault, not a passing failure, so the
error, :class:`DeltaArgumentError`, is Airflow's ``AirflowFailException`` (the task fails
at once, its retries unused) as well as the log layer's ``InvalidArgumentError``.
"""
from __future__ import annotations

import ast
import json
import math
import numbers
from contextlib import contextmanager
from typing import Any, Iterable, Iterator

from airflow.providers.common.compat.sdk import AirflowFailException

from .commits import as_version
from ..log import InvalidArgumentError, checked_properties, to_epoch_ms

#: the only spellings a flag accepts (case-insensitive, surrounding blanks ignored), besides real bools
TRUE_WORDS = ("true", "1", "yes")
FALSE_WORDS = ("false", "0", "no")
#: rendered text that stands for "not given" in an optional (non-flag) argument
MISSING_WORDS = ("", "none", "null")


class DeltaArgumentError(InvalidArgumentError, AirflowFailException):
    """An argument of a Delta task, as written or as its template rendered, means nothing valid.

    Fails the task without retrying (``AirflowFailException``): a retry renders the same
    value. Also an :class:`~airflow_provider_delta.log.InvalidArgumentError`.
    """


class _NotGiven:
    """The default of an optional argument whose explicit None means something: a mapped task
    (``.expand(input_manifest_uri=...)``) is built with the value already resolved, so a None there
    is a value that came from upstream (a snapshot that wrote no manifest), not "not given"."""

    def __repr__(self) -> str:
        return "NOT_GIVEN"

    def __bool__(self) -> bool:
        return False


#: the "not given" default (see :class:`_NotGiven`)
NOT_GIVEN: Any = _NotGiven()


@contextmanager
def refused_without_retry(what: str) -> Iterator[None]:
    """Inside: the log layer's :class:`~airflow_provider_delta.log.InvalidArgumentError` (an argument it
    cannot use, nothing changed) becomes :class:`DeltaArgumentError`, so the task fails without retry.

    For arguments the log layer parses itself (sizes, partition filters, Z-order columns): its
    refusal depends only on the rendered value and the table, which a retry does not change.
    """
    try:
        yield
    except DeltaArgumentError:
        raise
    except InvalidArgumentError as e:
        raise DeltaArgumentError(f"{what}: {e}") from e


def is_template(value: Any) -> bool:
    """True for a value Airflow has not rendered yet (checked again after rendering)."""
    return isinstance(value, str) and ("{{" in value or "{%" in value)


def optional_value(value: Any) -> Any:
    """Rendered templates turn a missing optional value into '' or 'None': both mean None."""
    if isinstance(value, str) and value.strip().lower() in MISSING_WORDS:
        return None
    return value


def parse_transaction_id(value: Any, name: str, required: bool) -> str | None:
    """A multi-table transaction id (the begin task's XCom), or None when not given: ``""``,
    ``"None"`` or None, what ``"{{ ti.xcom_pull(task_ids='begin') }}"`` renders to when there is
    no such XCom (a wrong task id, a begin that did not run).

    ``required`` (publish, abort): a missing id raises :class:`DeltaArgumentError` before any
    catalog is asked (:func:`given_value`), so no transaction changes and the task is not retried.
    A value that is not text (a dict, a number) is refused the same way.
    """
    advice = ("Nothing was changed. Pass the id the begin task returned, e.g. "
              "\"{{ ti.xcom_pull(task_ids='begin') }}\", and check that the task id names the begin task.")
    tx_id = given_value(value, required, name, "no transaction id", then=advice, said="is")
    if tx_id is None:
        return None
    if not isinstance(tx_id, str):
        raise DeltaArgumentError(f"{name} is {value!r}: not a transaction id ({type(tx_id).__name__}). {advice}")
    return tx_id.strip()


def input_manifest(value: Any, given: bool, name: str = "input_manifest_uri") -> str | None:
    """The manifest a task reads, or None when the task was built without one.

    A task built with a manifest (``"{{ ti.xcom_pull('pin')['manifest_uri'] }}"``) whose value
    renders to nothing (``"None"``, ``""``, None) must not run without its input, nor read a
    file named ``None``: the snapshot task upstream wrote no manifest (``write_manifest=False``,
    or it may not write into the table folder), so this raises :class:`DeltaArgumentError`
    (:func:`given_value`) saying what to pass instead.
    """
    uri = given_value(
        value, given, name,
        "the snapshot task it comes from wrote no manifest (its manifest_uri is None with write_manifest=False, "
        "or when it may not write into the table folder)",
        then="Nothing was read. Give that task a writable manifest_uri, or pass input_table_uri and input_version "
             "from its XCom (its 'table_uri' and 'version') instead.")
    return None if uri is None else str(uri)


def manifest_argument(input_manifest_uri: Any, input_table_uri: Any) -> tuple[Any, bool]:
    """A Spark operator's ``input_manifest_uri`` as built: (the value, or None when not given; whether the
    task reads a manifest). A None given (a mapped value resolved to None) counts as given, so
    :func:`input_manifest` refuses it when the task runs; a manifest with ``input_table_uri`` is refused now."""
    reads_manifest = input_manifest_uri is not NOT_GIVEN
    uri = input_manifest_uri if reads_manifest else None
    if uri is not None and input_table_uri is not None:
        raise InvalidArgumentError("pass input_manifest_uri or input_table_uri, not both")
    return uri, reads_manifest


def given_value(value: Any, given: bool, name: str, missing: str, then: str = "Nothing was done.",
                said: str = "rendered to") -> Any:
    """An optional argument's value, refused when the task was built with one that rendered to nothing.

    ``transaction_id="{{ ti.xcom_pull(task_ids='begin') }}"`` whose XCom is missing renders
    ``"None"``; read as "not given", the task would quietly do something else (commit instead of
    staging into the audited group). ``missing`` says what the value should have come from,
    ``then`` what (nothing) was done and what to pass instead. The one check of "given but rendered
    to nothing" (:func:`input_manifest` and :func:`parse_transaction_id` use it too).
    """
    result = optional_value(value)
    if result is None and given:
        raise DeltaArgumentError(f"{name} {said} {value!r}: {missing}. {then}")
    return result


def flag(value: Any, name: str, deletes: bool = False) -> bool:
    """A yes/no argument: a bool, 0/1, or one of ``true/false/1/0/yes/no`` in any case.

    Anything else (``"None"``, ``""``, ``"maybe"``, None) raises :class:`DeltaArgumentError`
    naming the argument and the value it rendered to. ``deletes`` marks a flag whose wrong
    reading would delete files; the message then says that nothing was deleted.
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
    consequence = " Nothing was deleted." if deletes else ""
    raise DeltaArgumentError(
        f"{name} must be true or false (a bool, or one of {'/'.join(TRUE_WORDS + FALSE_WORDS)}), but it is "
        f"{value!r}{' (its template rendered to that)' if isinstance(value, str) or value is None else ''}."
        f"{consequence} Give the flag a value in every run, e.g. "
        f"\"{{{{ dag_run.conf.get('{name}', true) }}}}\".")


def optional_int(value: Any, name: str) -> int | None:
    """A table version or count (``'12'``, 12), or None for a missing value (``'None'``, ``''``)."""
    try:
        return as_version(value, name)
    except InvalidArgumentError as e:
        raise DeltaArgumentError(str(e)) from None


def version_or_timestamp(version: Any, timestamp: Any, required: str | None = None, version_name: str = "version",
                         timestamp_name: str = "timestamp") -> tuple[int | None, Any]:
    """A table version as of ``version`` or ``timestamp``, as rendered: ``(version or None, timestamp or None)``.

    ``""`` and ``"None"`` mean not given (:func:`optional_int`, :func:`optional_value`); a timestamp must be
    one the log reads (epoch ms, datetime or ISO-8601; it is returned as given). Both given, or neither when
    ``required`` names what needs one (``"restore"``), is :class:`DeltaArgumentError`: a retry renders the
    same values. Whether the table has such a version is the table's answer, not checked here.
    """
    number = optional_int(version, version_name)
    when = optional_value(timestamp)
    if when is not None:
        with refused_without_retry(timestamp_name):
            to_epoch_ms(when)
    if number is not None and when is not None:
        raise DeltaArgumentError(f"pass either {version_name} or {timestamp_name}, not both (got {version!r} and "
                                 f"{timestamp!r})")
    if number is None and when is None and required:
        raise DeltaArgumentError(
            f"{required} needs exactly one of {version_name} or {timestamp_name}, but {version_name} is "
            f"{version!r} and {timestamp_name} {timestamp!r} (a template of a missing value renders 'None'). "
            "Nothing was done.")
    return number, when


def optional_positive_int(value: Any, name: str) -> int | None:
    """A positive integer, or None when not given."""
    try:
        number = as_version(value, name)
    except InvalidArgumentError:
        number = 0
    if number is not None and number < 1:
        raise DeltaArgumentError(f"{name} must be a positive integer, got {value!r}")
    return number


def check_flags(**flags: Any) -> None:
    """At construction: refuse flags given as plain values that mean nothing (templates wait for rendering),
    so such a DAG fails to import instead of failing when it runs."""
    for name, value in flags.items():
        if not is_template(value):
            flag(value, name)


def optional_hours(value: Any, name: str) -> float | None:
    """A number of hours (``'168'``, ``0.5``), or None when not given."""
    value = optional_value(value)
    if value is None:
        return None
    # text or a number; never a bool (numpy's bool_ is no numbers.Number, so it is refused too)
    if isinstance(value, bool) or not isinstance(value, (str, numbers.Number)):
        raise DeltaArgumentError(f"{name} must be a number of hours, got {value!r}")
    try:
        hours = float(value)
    except (TypeError, ValueError, OverflowError):
        raise DeltaArgumentError(f"{name} must be a number of hours, got {value!r}") from None
    if not math.isfinite(hours) or hours < 0:       # NaN, inf: no retention the table can use
        raise DeltaArgumentError(f"{name} must be a finite number of hours >= 0, got {value!r}")
    return hours


def choice(value: Any, name: str, choices: Iterable[str]) -> str:
    """One of ``choices`` (compared without case)."""
    options = tuple(choices)
    word = str(value).strip().lower() if isinstance(value, str) else None
    if word not in options:
        raise DeltaArgumentError(f"{name} must be one of {', '.join(options)}; got {value!r}")
    return word


def column_names(value: Any, name: str) -> list[str] | None:
    """Column names: a list of names, one name, ``"a,b"``, a JSON list (``'["a", "b"]'``) or a list
    param rendered to its Python text (``"['a', 'b']"``, what ``"{{ params.cols }}"`` renders to);
    None when not given (``""``, ``"None"``).

    Bracketed text is read as JSON, else as a Python literal (:func:`ast.literal_eval`: literals
    only, nothing is evaluated), and must then be a list or tuple of non-empty strings; anything
    else in brackets (``"[day]"``, ``"['a', 1]"``) is refused rather than taken as one column
    named ``[day]``.
    """
    value = optional_value(value)
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        value = _bracketed_list(text, name) if text[:1] in "[(" else [c.strip() for c in text.split(",")]
    if not isinstance(value, (list, tuple)) or not all(isinstance(c, str) and c.strip() for c in value):
        raise DeltaArgumentError(f"{name} must be a list of non-empty column names, got {value!r}")
    return [c.strip() for c in value]


def _bracketed_list(text: str, name: str) -> Any:
    """``'["a"]'`` (JSON) or ``"['a']"`` / ``"('a',)"`` (a rendered Python list or tuple), parsed."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise DeltaArgumentError(
            f"{name} must be column names (a list, \"a,b\", a JSON list or a rendered Python list of strings), "
            f"but it is {text!r}") from None


def mapping(value: Any, name: str) -> dict[str, Any]:
    """A dict argument (rendered templates inside it are rendered already), None meaning empty."""
    value = optional_value(value)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise DeltaArgumentError(f"{name} must be a dict, got {type(value).__name__}: {value!r}")
    return dict(value)


def string_map(value: Any, name: str) -> dict[str, str]:
    """A dict of text to text, such as table properties (Delta keeps configuration as strings: a
    ``True`` would be written as JSON ``true`` where readers expect ``"true"``)."""
    out = mapping(value, name)
    wrong = {k: v for k, v in out.items() if not isinstance(k, str) or not isinstance(v, str)}
    if wrong:
        raise DeltaArgumentError(f"{name} must map names to strings (e.g. \"true\", not True); got {wrong!r}")
    return out


def checked_table_properties(value: Any, name: str = "table_properties") -> dict[str, str]:
    """Table properties as :func:`string_map` takes them, their names and values checked as a create
    checks them (:func:`~airflow_provider_delta.log.checked_properties`: a misspelt ``delta.*`` name, a
    bad value), in Delta Spark's spelling; a refusal is :class:`DeltaArgumentError` (no retry)."""
    with refused_without_retry(name):
        return checked_properties(string_map(value, name))
