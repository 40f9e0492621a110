"""SQLite storage: one file, WAL mode, versioned migrations, transactional writes."""

from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path

MIGRATIONS: list[str] = [
    # 1: harnesses, outcomes, incumbents with history, vectors (the index's source of truth)
    """
    CREATE TABLE harnesses (
        id TEXT PRIMARY KEY, name TEXT NOT NULL, description TEXT NOT NULL, spec TEXT NOT NULL,
        parent_id TEXT, origin TEXT NOT NULL, generator TEXT NOT NULL, created_at REAL NOT NULL);
    CREATE INDEX harnesses_parent ON harnesses(parent_id);
    CREATE TABLE outcomes (
        id INTEGER PRIMARY KEY AUTOINCREMENT, harness_id TEXT NOT NULL REFERENCES harnesses(id),
        task_id TEXT NOT NULL, task_digest TEXT NOT NULL, task_text TEXT NOT NULL, cluster TEXT NOT NULL,
        reward REAL NOT NULL CHECK (reward >= 0 AND reward <= 1), prompt_tokens INTEGER, completion_tokens INTEGER,
        wall_s REAL NOT NULL, verdict TEXT NOT NULL, source TEXT NOT NULL CHECK (source IN ('run', 'feedback')),
        created_at REAL NOT NULL);
    CREATE INDEX outcomes_cluster ON outcomes(cluster, harness_id);
    CREATE TABLE incumbents (cluster TEXT PRIMARY KEY, harness_id TEXT NOT NULL REFERENCES harnesses(id),
        since REAL NOT NULL);
    CREATE TABLE decisions (
        id INTEGER PRIMARY KEY AUTOINCREMENT, cluster TEXT NOT NULL, candidate_id TEXT NOT NULL,
        previous_id TEXT, kind TEXT NOT NULL CHECK (kind IN ('promote', 'keep', 'rollback')),
        reason TEXT NOT NULL, decided_at REAL NOT NULL);
    CREATE INDEX decisions_cluster ON decisions(cluster, id);
    CREATE TABLE vectors (
        vid INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL CHECK (kind IN ('harness', 'experience')),
        ref TEXT NOT NULL, vector BLOB NOT NULL);
    CREATE TABLE embedding_cache (digest TEXT PRIMARY KEY, vector BLOB NOT NULL);
    """,
    # 2: every synthesized candidate, valid or not, with its validation/repair history (training data)
    """
    CREATE TABLE candidates (
        id INTEGER PRIMARY KEY AUTOINCREMENT, task_digest TEXT NOT NULL, task_id TEXT NOT NULL,
        harness_id TEXT REFERENCES harnesses(id), parent_id TEXT, origin TEXT NOT NULL, generator TEXT NOT NULL,
        valid INTEGER NOT NULL, history TEXT NOT NULL, created_at REAL NOT NULL);
    CREATE INDEX candidates_task ON candidates(task_digest);
    DROP TABLE embedding_cache;
    """,
    # 3: what a harness answered and its last steps (reflective mutation reads failures), per-harness reads
    """
    ALTER TABLE outcomes ADD COLUMN answer TEXT;
    ALTER TABLE outcomes ADD COLUMN trace TEXT NOT NULL DEFAULT '';
    CREATE INDEX outcomes_harness ON outcomes(harness_id);
    """,
]


class Store:
    """A thread-safe wrapper over one SQLite connection; `transaction()` serializes writes."""

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

    def _migrate(self) -> None:
        with self.transaction() as db:
            db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = db.execute("SELECT version FROM schema_version").fetchone()
            version = row[0] if row else 0
            if row is None:
                db.execute("INSERT INTO schema_version VALUES (0)")
            for number, sql in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in filter(str.strip, sql.split(";")):
                    db.execute(statement)
                db.execute("UPDATE schema_version SET version = ?", (number,))

    @property
    def version(self) -> int:
        return self.query("SELECT version FROM schema_version")[0][0]

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

    def close(self) -> None:
        with self._lock:
            self.db.close()


def now() -> float:
    return time.time()
