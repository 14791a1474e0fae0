"""The SQL catalog's database side (catalog-managed tables, multi-table transactions).

:mod:`.store` (SQLAlchemy) keeps tables, ratified commits, groups and tombstones and
ratifies one commit or a whole group in one database transaction; :mod:`.table_source`
is what a reader and a writer of one table ask (a commit source that also commits and
publishes) and imports no SQLAlchemy itself; :mod:`.pinned` answers from one consistent
catalog state. The user-facing ``SqlCatalog`` is in ``log/catalogs/`` (it writes tables).
"""
