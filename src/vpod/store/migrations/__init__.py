"""Alembic migrations of the store's schema, shipped inside the package.

Run them with :meth:`vpod.store.Store.migrate`; there is no ``alembic.ini``.
To add a revision after changing ``vpod/store/schema.py``, see docs/store.md
("Changing the schema").
"""
