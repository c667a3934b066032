"""Schema revisions, oldest first: ``0001_initial`` creates every table; ``0002_sources`` the
sources transactions load; ``0003_write_files`` what each write id wrote and the metastore's
identity; ``0004_open_txns_procedure`` PostgreSQL's ``acid_open_txns``. A new revision comes
with the same change in ``metastore/schema.py`` and a new ``migrate.HEAD``."""
