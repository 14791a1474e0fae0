"""The package's structure, checked from its source: one-way imports, thin outer layers.

``docs/architecture.md`` draws these tiers; this test keeps the code and the
drawing in step. Imports inside functions count (hiding an import in a function
does not remove the dependency); ``if TYPE_CHECKING:`` imports do not.
"""
from __future__ import annotations

import pytest

from import_graph import PACKAGE, build_graph, external_imports, find_cycles

LOG = f"{PACKAGE}.log"

#: The tiers of the log package, lowest first. A module may import modules of its own tier
#: or of a lower one, never of a higher one.
LOG_TIERS: dict[str, set[str]] = {
    "ground": {"errors", "records", "backoff", "names", "actions", "commit_actions", "action_schemas", "arrow_build", "arrow_kernels", "parquet_file", "features", "schema", "schema_fit", "storage", "file_info", "local_files", "fsspec_files", "object_store",
               "timeutil", "intervals", "ict", "stats", "commit_source", "catalog",
               "commit_owner", "commit_owner.base", "commit_owner.backfill", "commit_owner.conf",
               "commit_owner.in_memory", "commit_owner.records", "commit_owner.registry", "commit_owner.sql",
               "commit_owner.sql_engine", "commit_owner.sql_schema"},
    "read": {"listing", "segment", "commit_reader", "replay", "checkpoint_reader", "protocol_metadata",
             "commit_timestamps", "managed_state", "reader", "snapshot", "history", "new_commits", "table_log",
             "deletion_vectors", "column_mapping", "data_paths", "change_rows",
             "change_feed", "remove_details"},
    "write": {"conflicts", "commit_route", "commit_info", "checkpoint", "checkpoint_rows", "checkpoint_sources", "distributed_checkpoint", "commit_plan", "committer", "transaction", "write_plan", "writer",
              "create", "compaction", "cleanup", "vacuum", "managed"},
    "top": {"table", "operations", "", "incremental"},
}
TIER_ORDER = list(LOG_TIERS)


def _tier_of(module: str) -> str:
    short = module[len(LOG) + 1:] if module != LOG else ""
    for tier, names in LOG_TIERS.items():
        if short in names:
            return tier
    raise AssertionError(f"{module} is in no tier of this test: add it to LOG_TIERS (and docs/architecture.md)")


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
