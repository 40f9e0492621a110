"""Opening a bank's store by its location: a `postgresql://` URL or an SQLite file.

Apart from store.py so that the stores import their base class and the factory imports the stores,
with no cycle between them.
"""

from __future__ import annotations

from pathlib import Path

from harness_bank.sqlite_store import SqliteStore
from harness_bank.store import Store, is_url


def open_store(location: str | Path) -> Store:
    """A `postgresql://` URL opens PostgreSQL; anything else is an SQLite file."""
    if is_url(location):
        from harness_bank.postgres_store import PostgresStore  # psycopg (a tenth of a second) only where used
        return PostgresStore(location)
    return SqliteStore(location)
