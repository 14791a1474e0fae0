"""The how-to pages cannot drift from the code: every public operator, sensor, trigger, the decorator
and the hook has a page; the parameter list a page shows (the docstring's ``:param`` lines, rendered
by ``autoclass``) names exactly the constructor's parameters; a parameter the docstring calls
templated is in ``template_fields`` (and every argument the index page says is templated is); a
default the docstring states is the signature's; an argument a page writes as ``name=...`` exists;
and the index page's list of strictly-read flags is the set of boolean arguments.
"""
from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

import airflow_provider_delta.decorators as decorators
import airflow_provider_delta.hooks as hooks
import airflow_provider_delta.operators as operators
import airflow_provider_delta.sensors as sensors
import airflow_provider_delta.triggers as triggers
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow_provider_delta.decorators.delta_snapshot import _DeltaSnapshotDecoratedOperator

DOCS = Path(__file__).resolve().parents[2] / "docs"
HOWTO = DOCS / "howto"
#: the decorator's page documents the function; its parameters are the decorated operator's
DECORATOR = decorators.delta_snapshot_task
#: the trigger's serialized progress: kwargs the sensor and the triggerer pass, no DAG author
TRIGGER_STATE = {"last_seen", "commits", "count", "first_version", "latest"}


def public_classes() -> dict[str, type]:
    found = {name: getattr(operators, name) for name in operators.__all__}
    for module in (sensors, triggers, hooks):
        found.update({name: getattr(module, name) for name in module.__all__})
    return found


def howto_targets() -> dict[str, Path]:
    """Dotted name of every autoclass/autofunction on a how-to page -> the page."""
    found = {}
    for page in sorted(HOWTO.glob("*.md")):
        for target in re.findall(r"\.\. auto(?:class|function):: ([\w.]+)", page.read_text()):
            found[target] = page
    return found


def own_parameters(cls: type) -> dict[str, inspect.Parameter]:
    """The constructor parameters this package adds (its classes in the MRO), by name."""
    params: dict[str, inspect.Parameter] = {}
    for klass in reversed(cls.__mro__):
        if not klass.__module__.startswith("airflow_provider_delta") or "__init__" not in vars(klass):
            continue
        for name, p in inspect.signature(klass.__init__).parameters.items():
            if name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                params[name] = p
    return params


def documented(obj: object) -> dict[str, str]:
    """``:param name: text`` of a docstring, the continuation lines joined."""
    doc = inspect.getdoc(obj) or ""
    out: dict[str, str] = {}
    for m in re.finditer(r":param (\w+):(.*?)(?=\n\s*:param |\n\s*\n|\Z)", doc, re.DOTALL):
        out[m.group(1)] = " ".join(m.group(2).split())
    return out


def documented_classes() -> list[tuple[str, type, object]]:
    """(name, class whose constructor counts, object whose docstring is shown)."""
    rows = [(name, cls, cls) for name, cls in public_classes().items()
            if name not in ("DeltaTableHook", "DeltaBaseOperator")]
    rows.append(("delta_snapshot_task", _DeltaSnapshotDecoratedOperator, DECORATOR))
    rows.append(("DeltaBaseOperator", operators.DeltaBaseOperator, operators.DeltaBaseOperator))
    return rows


def test_every_public_class_has_a_page():
    targets = howto_targets()
    names = {t.rsplit(".", 1)[1] for t in targets}
    missing = set(public_classes()) - names - {"DeltaBaseOperator"}
    assert not missing, f"public classes with no how-to page: {sorted(missing)}"
    assert "delta_snapshot_task" in names
    # the base class users subclass is in the API reference
    assert "autoclass:: airflow_provider_delta.operators.DeltaBaseOperator" in (DOCS / "api" / "airflow.md").read_text()


@pytest.mark.parametrize("name,cls,shown", documented_classes(), ids=lambda v: v if isinstance(v, str) else "")
def test_parameter_list_matches_the_signature(name, cls, shown):
    params = set(own_parameters(cls))
    if name == "delta_snapshot_task":
        params = params - {"python_callable", "op_args", "op_kwargs"} | {"multiple_outputs"}
    if name == "DeltaCommitTrigger":
        params -= TRIGGER_STATE
    doc = set(documented(shown))
    if name == "DeltaCommitTrigger":
        doc -= TRIGGER_STATE
    assert params - doc == set(), f"{name}: parameters missing from its page: {sorted(params - doc)}"
    assert doc - params == set(), f"{name}: the page lists parameters the code does not take: {sorted(doc - params)}"


def _templated_exceptions(cls: type) -> set[str]:
    """Arguments a page says are not templated: the sensor's ``deferrable``; for the Spark operators,
    the ``SparkSubmitOperator`` arguments they re-declare, templated as that operator templates them."""
    if issubclass(cls, SparkSubmitOperator):
        spark_own = set(inspect.signature(SparkSubmitOperator.__init__).parameters)
        return {p for p in spark_own if p not in SparkSubmitOperator.template_fields}
    return {"deferrable"}


@pytest.mark.parametrize("name,cls,shown", documented_classes(), ids=lambda v: v if isinstance(v, str) else "")
def test_templated_as_the_pages_say(name, cls, shown):
    fields = set(getattr(cls, "template_fields", ()) or ())
    said = {p for p, text in documented(shown).items() if re.search(r"\btemplated\b", text)
            and not re.search(r"\bnot templated\b", text)}
    assert said <= fields, f"{name}: documented as templated but not in template_fields: {sorted(said - fields)}"
    if name in triggers.__all__:
        assert not said, f"{name}: a trigger's arguments are not templated (the index page says so)"
        return
    # the index page: every argument an operator, the sensor or the decorator adds is templated
    params = set(own_parameters(cls)) - {"python_callable", "op_args", "op_kwargs"}
    untemplated = params - fields - _templated_exceptions(cls)
    assert not untemplated, f"{name}: arguments not templated, though the index page says every one is: {sorted(untemplated)}"


_DEFAULT = re.compile(r"\bdefault:? (``)?(True|False|None|-?\d+(?:\.\d+)?)\1?(?![\w,.]*\d)")


@pytest.mark.parametrize("name,cls,shown", documented_classes(), ids=lambda v: v if isinstance(v, str) else "")
def test_stated_defaults_are_the_signatures(name, cls, shown):
    params = own_parameters(cls)
    wrong = {}
    for p, text in documented(shown).items():
        m = _DEFAULT.search(text)
        if m is None or p not in params or params[p].default is inspect.Parameter.empty:
            continue
        if ast.literal_eval(m.group(2)) != params[p].default:
            wrong[p] = (m.group(2), params[p].default)
    assert not wrong, f"{name}: the page states defaults the code does not have (page, code): {wrong}"


def _known_arguments() -> set[str]:
    known: set[str] = set()
    for _, cls, _ in documented_classes():
        known |= set(own_parameters(cls))
    known |= {"multiple_outputs"}
    for _, fn in inspect.getmembers(hooks.DeltaTableHook, inspect.isfunction):
        known |= set(inspect.signature(fn).parameters)
    known |= set(inspect.signature(SparkSubmitOperator.__init__).parameters)
    # Airflow's own, as the pages use them in examples
    known |= {"task_id", "mode", "poke_interval", "timeout", "render_template_as_native_obj", "max_active_runs",
              "schedule", "outlets", "retries", "name", "watchers", "trigger"}
    return known


@pytest.mark.parametrize("page", sorted(HOWTO.glob("*.md")), ids=lambda p: p.name)
def test_arguments_written_on_a_page_exist(page):
    """``name=...`` in backquotes or in a page's own code blocks (not the included example DAGs):
    an argument the code renamed or dropped fails here."""
    text = page.read_text()
    written = set(re.findall(r"`([a-z_0-9]+)=", text))     # camelCase: a Delta action field
    for block in re.findall(r"```python\n(.*?)```", text, re.DOTALL):
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.Call):
                written |= {k.arg for k in node.keywords if k.arg}
    log_api = _log_layer_arguments()
    unknown = written - _known_arguments() - log_api
    assert not unknown, f"{page.name} writes arguments no documented class takes: {sorted(unknown)}"


def _log_layer_arguments() -> set[str]:
    """Arguments of the log layer's public functions and methods (pages show the same from Python)."""
    import airflow_provider_delta.log as log
    names: set[str] = set()
    for name in log.__all__:
        obj = getattr(log, name)
        members = [obj] + ([m for _, m in inspect.getmembers(obj, inspect.isfunction)] if inspect.isclass(obj) else [])
        for member in members:
            try:
                names |= set(inspect.signature(member).parameters)
            except (TypeError, ValueError):
                pass
    return names


def test_the_index_lists_every_flag():
    """The index page's "Rendered flags fail safe" list names exactly the boolean arguments (the
    sensor's ``deferrable`` apart: it is not templated)."""
    text = (HOWTO / "index.md").read_text()
    paragraph = text.split("**Rendered flags fail safe.**", 1)[1].split("accepts", 1)[0]
    listed = set(re.findall(r"`(\w+)`", paragraph))
    flags = set()
    for name, cls, _ in documented_classes():
        if name in triggers.__all__:
            continue                   # built in the DAG file, never rendered
        flags |= {n for n, p in own_parameters(cls).items() if isinstance(p.default, bool)}
    flags -= {"deferrable"}
    assert listed == flags, f"listed but no flag: {sorted(listed - flags)}; flags not listed: {sorted(flags - listed)}"


_REQUIRED = {"output_table_uri": "/tmp/out", "transform": "identity", "application": "app.py",
             "source_uri": "/tmp/src", "table_uri": "/tmp/t"}


def _flag_cases() -> list[tuple[str, type, str]]:
    cases = []
    for name, cls, _ in documented_classes():
        if name in triggers.__all__ or name == "delta_snapshot_task":
            continue
        for p, param in own_parameters(cls).items():
            if isinstance(param.default, bool) and p != "deferrable":
                cases.append((name, cls, p))
    return cases


@pytest.mark.parametrize("name,cls,flag_name", _flag_cases(), ids=lambda v: v if isinstance(v, str) else "")
def test_a_meaningless_plain_flag_is_refused_when_the_dag_is_parsed(name, cls, flag_name):
    """The index page: a flag written as a plain value that means nothing is refused when the DAG
    file is parsed, ``delta_sql_conf`` only when the task runs."""
    from airflow_provider_delta.log import InvalidArgumentError

    params = own_parameters(cls)
    kwargs = {p: _REQUIRED[p] for p, v in params.items() if v.default is inspect.Parameter.empty}
    kwargs[flag_name] = "maybe"
    if flag_name == "delta_sql_conf":
        cls(task_id="t", **kwargs)                     # accepted now, refused when the task runs
        return
    with pytest.raises(InvalidArgumentError, match=flag_name):
        cls(task_id="t", **kwargs)
