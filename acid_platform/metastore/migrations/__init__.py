"""Alembic migrations of the metastore schema (run programmatically by ``migrate.py``).

This directory is a Python package so that ``env.py`` and ``versions/*.py`` ship inside the
installed distribution as ordinary modules; no ``alembic.ini`` is needed.
"""
