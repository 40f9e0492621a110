"""Where the bank keeps its tables: SQLite (one file, the embedded default) or PostgreSQL (one
database that many replicas share).

The bank writes one SQL for both (`?` placeholders, RETURNING, ON CONFLICT), with the few pieces
here that its modules share; a store supplies what differs: connections and transactions, locks
that serialize writers across processes, the migrations' column types, and news of what other
processes committed. store_factory.py opens the store a location names.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection
from contextlib import AbstractContextManager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from harness_bank.migrations import MIGRATIONS, statements

URL_SCHEMES = ("postgresql://", "postgres://")
TOKENS = "prompt_tokens + completion_tokens"  # a run's tokens, summed in SQL: NULL (unknown) + n is NULL


class StoreUnavailable(RuntimeError):
    """The database cannot be reached or used; the message is one line. `kind`: `unreachable` (nothing
    answered), `login` (it answered and refused the login: a password missing or wrong) or `unusable`."""

    def __init__(self, message: str, kind: str = "unusable"):
        super().__init__(message)
        self.kind = kind


class Store:
    """What the bank needs of a database. `transaction()` yields a connection whose `execute(sql,
    params)` returns a cursor (`fetchone`, `fetchall`); rows read by position and by column name."""

    dialect: str
    shared = False  # other processes write too: the bank follows them with `watch`
    path: Path | None = None  # the database file, where there is one

    def transaction(self) -> AbstractContextManager:
        raise NotImplementedError

    def query(self, sql: str, params: tuple = ()) -> list:
        raise NotImplementedError

    def lock(self, db, key: str) -> None:
        """Hold `key` until the transaction ends: writers on one key take turns, in every process.
        A no-op where a transaction already holds the whole database."""

    def notify(self, db) -> None:
        """Once the transaction commits, tell the processes that `watch` that something was added."""

    def watch(self, on_news: Callable[[], object], stop: threading.Event, poll_s: float) -> None:
        """Call `on_news` when another process commits news, and every `poll_s` anyway, until `stop`."""
        raise NotImplementedError

    def size_bytes(self) -> int:
        raise NotImplementedError

    def server_cluster_name(self) -> str | None:
        """The database server's `cluster_name` setting, what its operator named it (not one of the bank's
        task clusters); None where there is no server."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    @property
    def version(self) -> int:
        return self.query("SELECT version FROM schema_version")[0][0]

    def _migrate(self) -> None:
        """Apply the migrations this database lacks, all in one transaction; replicas starting at once
        take turns. A store that cannot be migrated is closed."""
        try:
            self._apply_migrations()
        except BaseException:
            self.close()
            raise

    def _apply_migrations(self) -> None:
        with self.transaction() as db:
            self.lock(db, "migrations")
            db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = db.execute("SELECT version FROM schema_version").fetchone()
            version = row[0] if row else 0
            if row is None:
                db.execute("INSERT INTO schema_version VALUES (0)")
            if version > len(MIGRATIONS):  # a newer jitagent migrated it: this one would misread it
                raise StoreUnavailable(f"the bank's schema is version {version}, newer than this jitagent's "
                                       f"{len(MIGRATIONS)}: upgrade jitagent")
            for number, migration in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in statements(migration, self.dialect):
                    db.execute(statement)
                db.execute("UPDATE schema_version SET version = ?", (number,))


def is_url(location: str | Path) -> bool:
    return isinstance(location, str) and location.startswith(URL_SCHEMES)


def describe(location: str | Path) -> str:
    """The location as it may be shown: a URL without its password."""
    if "://" not in str(location):
        return str(location)
    parts = urlsplit(str(location))
    if parts.password is None:
        return str(location)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def placeholders(values: Collection) -> str:
    """The `?` of an `IN (...)` list, one per value."""
    return ",".join("?" * len(values))


def insert(table: str, columns: Collection[str]) -> str:
    """`INSERT INTO table (columns) VALUES (?, ...)`: the caller writes each value beside its column."""
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({placeholders(columns)})"


def now() -> float:
    return time.time()

