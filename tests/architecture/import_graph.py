"""The package's import graph, read from the source with ``ast`` (nothing is imported).

Every ``import`` and ``from ... import`` counts, including those inside functions
(an import hidden in a function to dodge a circle is still a dependency); only
imports under ``if TYPE_CHECKING:`` are left out, since they never run.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "airflow_provider_delta"
ROOT = Path(__file__).resolve().parents[2] / PACKAGE


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Absolute names of every module this module imports at run time."""
    found: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            found.add(prefix)
            # "from . import x" or "from .pkg import mod" may name submodules
            found.update(f"{prefix}.{a.name}" for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def build_graph() -> dict[str, set[str]]:
    """module -> the package's modules it imports (names that are not modules are dropped)."""
    files = {module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(), str(path))
        targets = _imports(tree, name, path.name == "__init__.py")
        # a module's own packages are being imported already when it runs: not an edge
        graph[name] = {t for t in targets if t in files and t != name and not name.startswith(t + ".")}
    # importing a submodule runs its parent packages' __init__ first
    for name in list(graph):
        for t in list(graph[name]):
            parts = t.split(".")
            for i in range(1, len(parts)):
                parent = ".".join(parts[:i])
                if parent in files and not name.startswith(parent + ".") and parent != name:
                    graph[name].add(parent)
    return graph


def external_imports(module_prefix: str) -> dict[str, set[str]]:
    """Top-level names of everything imported by the modules under ``module_prefix``."""
    out: dict[str, set[str]] = {}
    for p in ROOT.rglob("*.py"):
        name = module_name(p)
        if name == module_prefix or name.startswith(module_prefix + "."):
            tree = ast.parse(p.read_text(), str(p))
            out[name] = _imports(tree, name, p.name == "__init__.py")
    return out


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    import sys
    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out
