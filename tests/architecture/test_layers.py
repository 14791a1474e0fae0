"""The package's structure, checked from its source: one-way imports, thin outer layers.

``docs/architecture.md`` draws these tiers; this test keeps the code and the
drawing in step. Imports inside functions count (hiding an import in a function
does not remove the dependency); ``if TYPE_CHECKING:`` imports do not.
"""
from __future__ import annotations

import ast
import textwrap

import import_graph
import pytest
from import_graph import PACKAGE, _imports, build_graph, external_imports, find_cycles

LOG = f"{PACKAGE}.log"

#: The tiers of the log package, lowest first, each a folder of ``log/`` (the top tier is
#: ``log/`` itself: ``table``, ``operations``, ``incremental`` and the package). A module may
#: import modules of its own tier or of a lower one, never of a higher one.
LOG_TIERS: dict[str, str] = {"ground": "base", "read": "read", "maintenance": "maintenance",
                             "write": "write", "catalogs": "catalogs", "top": ""}
TOP_MODULES = {"table", "operations", "incremental", ""}
TIER_ORDER = list(LOG_TIERS)


def _tier_of(module: str) -> str:
    short = module[len(LOG) + 1:] if module != LOG else ""
    folder = short.split(".")[0]
    for tier, name in LOG_TIERS.items():
        if name and folder == name:
            return tier
    if short in TOP_MODULES:
        return "top"
    raise AssertionError(f"{module} is in no tier folder of log/: move it into one "
                         "(and draw it in docs/architecture.md)")


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return build_graph()


def test_the_package_has_no_import_cycle(graph):
    assert find_cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_log_module_has_a_tier(graph):
    for module in graph:
        if module == LOG or module.startswith(LOG + "."):
            _tier_of(module)


def test_log_modules_import_only_their_tier_or_lower(graph):
    wrong = []
    for module, targets in graph.items():
        if not (module == LOG or module.startswith(LOG + ".")):
            continue
        level = TIER_ORDER.index(_tier_of(module))
        for t in targets:
            if (t == LOG or t.startswith(LOG + ".")) and TIER_ORDER.index(_tier_of(t)) > level:
                wrong.append(f"{module} ({_tier_of(module)}) imports {t} ({_tier_of(t)})")
    assert wrong == []


def _top_names(imports: set[str]) -> set[str]:
    return {name.split(".")[0] for name in imports}


def test_log_imports_no_airflow_no_pyspark_and_nothing_else_of_the_package():
    for module, imports in external_imports(LOG).items():
        assert not _top_names(imports) & {"airflow", "pyspark", "py4j"}, module
        # the package version (a constant of the root package) is the one name allowed from above
        ours = {i for i in imports if i.startswith(PACKAGE + ".") and i != f"{PACKAGE}.__version__"}
        outside = {i for i in ours if not (i == LOG or i.startswith(LOG + "."))}
        assert outside == set(), f"{module} imports {outside}"


def test_spark_imports_no_airflow():
    for module, imports in external_imports(f"{PACKAGE}.spark").items():
        assert "airflow" not in _top_names(imports), module


@pytest.mark.parametrize("layer", ["hooks", "sensors", "triggers", "operators", "spark", "assets"])
def test_outer_layers_use_only_the_public_log_api(graph, layer):
    prefix = f"{PACKAGE}.{layer}"
    private = {f"{m} -> {t}" for m, targets in graph.items() if m == prefix or m.startswith(prefix + ".")
               for t in targets if t.startswith(LOG + ".")}
    assert private == set()


def test_the_graph_counts_imports_inside_functions_and_leaves_out_type_checking_ones():
    tree = ast.parse(textwrap.dedent("""
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from .hidden import X
        def f():
            from .lazy import y
            import pkg.other
        class C:
            def m(self):
                from . import nested
    """))
    found = _imports(tree, "pkg.mod", False)
    assert {"pkg.lazy", "pkg.other", "pkg.nested"} <= found
    assert "pkg.hidden" not in found


def test_a_circle_closed_by_an_import_inside_a_function_is_a_cycle(tmp_path, monkeypatch):
    """An import moved into a function to dodge a circle at import time still closes the circle."""
    package = tmp_path / PACKAGE
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .b import g\n\ndef f():\n    return g()\n")
    (package / "b.py").write_text("def g():\n    from .a import f\n    return f\n")
    monkeypatch.setattr(import_graph, "ROOT", package)
    assert find_cycles(import_graph.build_graph()) == [[f"{PACKAGE}.a", f"{PACKAGE}.b"]]


#: modules that may import by a name computed at run time: a user's transform, named in the job arguments
IMPORTS_BY_NAME_ALLOWED = {f"{PACKAGE}.spark.transforms"}


def test_no_module_imports_by_a_computed_name():
    """``importlib.import_module`` and ``__import__`` hide an edge from the graph above (it reads import
    statements): a lazy name is imported with a plain ``from ... import`` inside ``__getattr__``."""
    found = []
    for path in import_graph.ROOT.rglob("*.py"):
        name = import_graph.module_name(path)
        if name in IMPORTS_BY_NAME_ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                f = node.func
                called = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
                if called in ("import_module", "__import__"):
                    found.append(f"{name}:{node.lineno}")
    assert found == []
