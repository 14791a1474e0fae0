"""Turning on Iceberg compatibility or UniForm Iceberg: what Delta Spark demands first, and what we write.

``delta.enableIcebergCompatV<n>=true`` adds the ``icebergCompatV<n>`` writer feature, whose rules
(stats on every add, no deletion vectors, an allow-list of types, no partition evolution, ...)
hold for every later commit. ``delta.universalFormat.enabledFormats`` containing ``iceberg`` asks
for Iceberg metadata after every commit and needs one of those compatibility versions. Delta Spark
(``IcebergCompat.enforceInvariantsAndDependencies``, ``UniversalFormat.enforceIcebergInvariantsAndDependencies``):

- enabling a compatibility version on an existing table without ``delta.columnMapping.mode``
  ``name`` or ``id`` fails (``DELTA_ICEBERG_COMPAT_WRONG_REQUIRED_TABLE_PROPERTY``; only CREATE
  and REORG turn column mapping on by themselves);
- UniForm Iceberg without any compatibility version enabled fails
  (``DELTA_UNIVERSAL_FORMAT_VIOLATION``, ``uniFormIcebergRequiresIcebergCompat``).

We refuse those two as Delta Spark does (:class:`InvalidArgumentError`, naming what to enable
first). Where Delta Spark would go on, we refuse with :class:`UnsupportedFeatureError`: this package
does not keep the ``icebergCompatV<n>`` rules nor write Iceberg metadata, so it does not turn them on
(enable them with Delta Spark).
"""
from __future__ import annotations

from .errors import InvalidArgumentError, UnsupportedFeatureError
from .features import ICEBERG_COMPAT_PREFIX, UNIVERSAL_FORMATS_PROPERTY, column_mapping_mode, is_true


def enabled_iceberg_compat(configuration: dict[str, str] | None) -> list[str]:
    """The ``delta.enableIcebergCompatV<n>`` properties set to true."""
    return sorted(k for k in (configuration or {}) if k.startswith(ICEBERG_COMPAT_PREFIX) and is_true(configuration, k))


def uniform_iceberg_enabled(configuration: dict[str, str] | None) -> bool:
    formats = (configuration or {}).get(UNIVERSAL_FORMATS_PROPERTY, "")
    return "iceberg" in [f.strip().lower() for f in formats.split(",")]


def check_iceberg_enablement(old: dict[str, str] | None, new: dict[str, str], creating: bool) -> None:
    """Refuse a commit that turns on an Iceberg compatibility version or UniForm Iceberg."""
    turned_on = [k for k in enabled_iceberg_compat(new) if k not in enabled_iceberg_compat(old)]
    if turned_on and not creating and column_mapping_mode(new) not in ("name", "id"):
        raise InvalidArgumentError(
            f"{turned_on[0]}=true needs column mapping: set delta.columnMapping.mode to 'name' (or 'id') "
            "in an earlier commit (Delta Spark refuses it too: DELTA_ICEBERG_COMPAT_WRONG_REQUIRED_TABLE_PROPERTY)")
    if uniform_iceberg_enabled(new) and not uniform_iceberg_enabled(old) and not enabled_iceberg_compat(new):
        raise InvalidArgumentError(
            f"{UNIVERSAL_FORMATS_PROPERTY}=iceberg needs an Iceberg compatibility version: enable "
            "delta.enableIcebergCompatV2 (which needs delta.columnMapping.mode='name') first (Delta Spark "
            "refuses it too: DELTA_UNIVERSAL_FORMAT_VIOLATION)")
    if turned_on or (uniform_iceberg_enabled(new) and not uniform_iceberg_enabled(old)):
        what = turned_on[0] if turned_on else f"{UNIVERSAL_FORMATS_PROPERTY}=iceberg"
        raise UnsupportedFeatureError(
            f"{what}: this package does not keep the icebergCompat rules nor write Iceberg metadata, so it "
            "does not turn them on; enable them with Delta Spark", feature="icebergCompat")
