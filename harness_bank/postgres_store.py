"""PostgreSQL: the bank shared by every replica and worker of a fleet (psycopg 3, a connection pool).

Writers that must take turns (admissions to one cluster, appends to the vector log, migrations)
hold a transaction-scoped advisory lock on a key. A commit that added vectors sends a NOTIFY; each
replica LISTENs and brings its own faiss index up to date from the vector log.

A server that restarts or goes away for a while costs a replica no restart: a pooled connection is
checked as it is taken (one that died with the server is replaced), a call waits up to
CONNECT_TIMEOUT_S for a connection while the server comes back, and one that fails for a lost
connection raises StoreUnavailable, which callers treat as "retry", not as a bug.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import contextmanager
from functools import lru_cache

import psycopg
from psycopg.types.numeric import FloatLoader
from psycopg_pool import ConnectionPool, PoolTimeout

from harness_bank.store import Store, StoreUnavailable, describe

CHANNEL = "jitagent_bank"
POOL_SIZE = 8  # a replica's threads that touch the bank at once; more wait for a connection
CONNECT_TIMEOUT_S = 10
log = logging.getLogger("jitagent.bank")


class Row(tuple):
    """A row readable by position and by column name, like sqlite3.Row."""

    def __new__(cls, values, columns: dict[str, int]):
        row = super().__new__(cls, values)
        row.columns = columns
        return row

    def __getitem__(self, key):
        return super().__getitem__(self.columns[key] if isinstance(key, str) else key)

    def keys(self) -> list[str]:
        return list(self.columns)


def row_factory(cursor):
    columns = {c.name: i for i, c in enumerate(cursor.description or ())}
    return lambda values: Row(values, columns)


@lru_cache(maxsize=256)
def pyformat(sql: str) -> str:
    """The bank's `?` placeholders as psycopg's `%s` (its SQL has no `?` or `%` of its own)."""
    return sql.replace("%", "%%").replace("?", "%s")


class Session:
    """One pooled connection inside a transaction, with the SQLite connection's `execute`."""

    def __init__(self, conn: psycopg.Connection):
        self.conn = conn

    def execute(self, sql: str, params: tuple = ()) -> psycopg.Cursor:
        return self.conn.execute(pyformat(sql), params)


def _configure(conn: psycopg.Connection) -> None:
    conn.adapters.register_loader("numeric", FloatLoader)  # AVG of integers: a float, as in SQLite


class PostgresStore(Store):
    dialect = "postgresql"
    shared = True

    def __init__(self, url: str):
        self.url = url
        try:  # one direct connection first: a pool that cannot connect only says it timed out
            psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S).close()
        except psycopg.Error as exc:
            # class 28, invalid authorization; a password the client lacks fails before the server answers
            login = (exc.sqlstate or "").startswith("28") or "password" in str(exc).lower()
            raise StoreUnavailable(f"PostgreSQL at {describe(url)}: {first_line(exc)}",
                                   "login" if login else "unreachable") from None
        self.pool = ConnectionPool(url, min_size=1, max_size=POOL_SIZE, open=False, configure=_configure,
                                   kwargs={"autocommit": True, "row_factory": row_factory},
                                   check=ConnectionPool.check_connection, timeout=CONNECT_TIMEOUT_S,
                                   name="jitagent-bank")
        self.pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
        self._migrate()

    @contextmanager
    def transaction(self):
        with self._reachable(), self.pool.connection() as conn, conn.transaction():
            yield Session(conn)

    def query(self, sql: str, params: tuple = ()) -> list[Row]:
        with self._reachable(), self.pool.connection() as conn:
            return conn.execute(pyformat(sql), params).fetchall()

    @contextmanager
    def _reachable(self):
        """A lost connection or a server that does not answer is StoreUnavailable; nothing was written
        (or, when the connection died during the commit, perhaps everything: the bank's writes are
        keyed by run and delivery, so retrying one is safe)."""
        try:
            yield
        except (psycopg.OperationalError, PoolTimeout) as exc:
            raise StoreUnavailable(f"PostgreSQL at {describe(self.url)}: {first_line(exc)}") from exc

    def lock(self, db: Session, key: str) -> None:
        db.execute("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", (key,))

    def notify(self, db: Session) -> None:
        db.execute("SELECT pg_notify(?, '')", (CHANNEL,))

    def watch(self, on_news: Callable[[], object], stop: threading.Event, poll_s: float) -> None:
        """LISTEN on a connection of its own; after a lost connection, reconnect and call `on_news`
        (what was committed meanwhile is read by id, so no notification needs to survive)."""
        while not stop.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    while not stop.is_set():
                        on_news()
                        for _ in conn.notifies(timeout=poll_s, stop_after=1):
                            pass
            except Exception as exc:  # the watcher outlives any one failure; the poll catches up
                log.warning("bank watch: %s", first_line(exc))
                stop.wait(poll_s)

    def size_bytes(self) -> int:
        return self.query("SELECT pg_database_size(current_database())")[0][0]

    def server_cluster_name(self) -> str:
        return self.query("SHOW cluster_name")[0][0]

    def close(self) -> None:
        self.pool.close()


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
