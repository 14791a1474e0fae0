"""Catalogs users hold: :class:`~.sql_catalog.SqlCatalog` (catalog-managed tables and
multi-table transactions on a SQL database). A tier above ``write/``: a catalog's
transaction writes data files and stages commits of several tables."""
