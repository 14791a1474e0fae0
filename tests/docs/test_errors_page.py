"""The errors page names every public error class, so a new one cannot ship undocumented.

Public: the exception classes the log layer exports (``airflow_provider_delta.log.__all__``)
and those defined, under a name without a leading underscore, in any module of the Airflow
layer (hooks, sensors, triggers, operators, decorators, spark, ...). A class counts as on the
page when its name appears there in backquotes.
"""
from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import airflow_provider_delta
import airflow_provider_delta.log as delta_log

PAGE = Path(__file__).resolve().parents[2] / "docs" / "log" / "errors.md"


def public_error_classes() -> dict[str, str]:
    """Class name -> the module that defines it."""
    found = {name: getattr(delta_log, name).__module__ for name in delta_log.__all__
             if isinstance(getattr(delta_log, name), type) and issubclass(getattr(delta_log, name), BaseException)}
    for info in pkgutil.walk_packages(airflow_provider_delta.__path__, "airflow_provider_delta."):
        if info.name.startswith("airflow_provider_delta.log"):
            continue                     # the log layer's public API is its __all__
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (isinstance(obj, type) and issubclass(obj, BaseException) and obj.__module__ == module.__name__
                    and not name.startswith("_")):
                found[name] = module.__name__
    return found


def test_every_public_error_class_is_on_the_errors_page():
    classes = public_error_classes()
    # the search sees both layers (else an empty result would pass)
    assert {"DeltaError", "GroupCommitError", "DeltaArgumentError", "DeltaJobContextError"} <= set(classes)
    named = set(re.findall(r"`(\w+)`", PAGE.read_text()))
    missing = {name: module for name, module in classes.items() if name not in named}
    assert not missing, f"public error classes missing from {PAGE.name}: {missing}"
