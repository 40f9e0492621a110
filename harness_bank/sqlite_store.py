"""The embedded default: one SQLite file in WAL mode, one connection, writes serialized."""

from __future__ import annotations

import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path

from harness_bank.store import Store


class SqliteStore(Store):
    """A thread-safe wrapper over one SQLite connection; `transaction()` serializes writes
    (BEGIN IMMEDIATE holds the whole database, so `lock` has nothing to add)."""

    dialect = "sqlite"

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self.db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        # WAL + NORMAL: a committed transaction survives a killed process (tested with SIGKILL);
        # only an OS crash or power loss can drop the last commits. FULL fsyncs every commit.
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self._migrate()

    @contextmanager
    def transaction(self):
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    def query(self, sql: str, params: tuple = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self.db.execute(sql, params).fetchall()

    def size_bytes(self) -> int:
        """The database with its WAL and the index file beside it."""
        return sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())

    def server_cluster_name(self) -> None:
        return None  # a file, no server

    def backup(self, path: str | Path) -> None:
        target = sqlite3.connect(path)
        with self._lock:
            self.db.backup(target)
        target.close()

    def close(self) -> None:
        with self._lock:
            self.db.close()
