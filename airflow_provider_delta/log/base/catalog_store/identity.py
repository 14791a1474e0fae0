"""Which catalog a catalog-managed table belongs to.

PROTOCOL.md leaves a table's catalog to the catalog (Unity Catalog writes its own table id,
``io.unitycatalog.tableId``, into the table's configuration). Ours records the SQL catalog's own
id in version 0's metaData configuration, so :meth:`SqlCatalog.register` can tell a table whose
creation this catalog should finish from a live table that another catalog holds (taking that one
over would fork it: both catalogs would ratify their own next version).
"""
from __future__ import annotations

from typing import Mapping

from ..errors import InvalidTableStateError

#: the table property naming the SQL catalog that created (and holds) a catalog-managed table
CATALOG_ID_PROPERTY = "io.airflowproviderdelta.catalogId"


def require_this_catalog(uri: str, configuration: Mapping[str, str] | None, catalog_id: str,
                         adopt: bool = False) -> None:
    """Fail safe: refuse (:class:`InvalidTableStateError`) unless the table records ``catalog_id``.

    A table recording another catalog is always refused. A table recording none (created by code
    older than the property) is taken only with ``adopt=True``: the caller vouches that no other
    catalog holds it.
    """
    recorded = (configuration or {}).get(CATALOG_ID_PROPERTY)
    if recorded == catalog_id:
        return
    if recorded is not None:
        raise InvalidTableStateError(
            f"{uri} belongs to another catalog ({CATALOG_ID_PROPERTY}={recorded}, this catalog is {catalog_id}); "
            "registering it here would fork the table. Open it through the catalog that created it")
    if not adopt:
        raise InvalidTableStateError(
            f"{uri} records no catalog ({CATALOG_ID_PROPERTY} is missing: created by an older version); "
            "register(uri, adopt=True) takes it over if you know no other catalog holds it")
