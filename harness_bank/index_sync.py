"""The faiss index kept in step with the vector log, the database's table `vectors`.

The log is appended in id order, one writer at a time, so an index follows it with a watermark:
after each write here and, for a shared bank, on every other replica's NOTIFY (or every `poll_s` at
the latest), it adds the vectors past its watermark. On open an index saved before the last writes
catches up; one that holds anything else is rebuilt from the log.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable

import numpy as np

from harness_bank.index import VectorIndex, as_matrix
from harness_bank.store import Store


class IndexSync:
    """Keeps `index` holding exactly the vector log up to `watermark`. `on_harness_vectors` is called
    when the index takes in a harness's vector (a rebuild takes in every one)."""

    def __init__(self, store: Store, index: VectorIndex, on_harness_vectors: Callable[[], None],
                 poll_s: float):
        self.store = store
        self.index = index
        self._on_harness_vectors = on_harness_vectors
        self._synced = threading.Condition()
        self.watermark = 0  # the index holds every vector up to this id
        self.repaired_on_open = self._check_index()
        self._stop_watching = threading.Event()
        self._watcher = None
        if store.shared:
            self._watcher = threading.Thread(target=store.watch, name="bank-watch", daemon=True,
                                             args=(self.catch_up, self._stop_watching, poll_s))
            self._watcher.start()

    def _db_vectors(self) -> tuple[np.ndarray, np.ndarray]:
        rows = self.store.query("SELECT vid, vector FROM vectors ORDER BY vid")
        return np.array([r["vid"] for r in rows], dtype=np.int64), as_matrix([r["vector"] for r in rows])

    def _check_index(self) -> bool:
        """Bring the index in line with the database on open: caught up when it holds a prefix of
        the vector log (saved before the last writes), rebuilt when it holds anything else (its
        newest vector differing says it is another database's). True when it changed."""
        db_ids = [r[0] for r in self.store.query("SELECT vid FROM vectors ORDER BY vid")]
        held = self.index.ids()
        top = max(held, default=0)
        if held != set(db_ids[:bisect.bisect_right(db_ids, top)]) or not self._holds_as_stored(top):
            self.reindex()
            return True
        with self._synced:
            self.watermark = top
        return self.catch_up() > 0

    def _holds_as_stored(self, vid: int) -> bool:
        """The index's vector `vid` is the database's (vid 0: there is none to compare)."""
        if not vid:
            return True
        rows = self.store.query("SELECT vector FROM vectors WHERE vid = ?", (vid,))
        return bool(rows) and np.array_equal(np.frombuffer(rows[0][0], dtype=np.float32),
                                             self.index.vector(vid))

    def reindex(self) -> int:
        """Rebuild the index from the vector log; the number of vectors."""
        with self._synced:
            ids, vectors = self._db_vectors()
            self.index.rebuild(ids, vectors)
            self.index.save()
            self.watermark = int(ids[-1]) if len(ids) else 0
            self._on_harness_vectors()
            self._synced.notify_all()
        return len(ids)

    def catch_up(self) -> int:
        """Add the vectors committed past the watermark (this process's and any other's) to the
        index, in id order; the number added."""
        with self._synced:
            rows = self.store.query("SELECT vid, kind, vector FROM vectors WHERE vid > ? ORDER BY vid",
                                    (self.watermark,))
            if not rows:
                return 0
            self.index.add(np.array([r["vid"] for r in rows], dtype=np.int64),
                           as_matrix([r["vector"] for r in rows]))
            self.watermark = rows[-1]["vid"]
            if any(r["kind"] == "harness" for r in rows):
                self._on_harness_vectors()
            self._synced.notify_all()
            return len(rows)

    def wait_synced(self, watermark: int, timeout: float) -> bool:
        """Block until the index holds every vector up to `watermark` (another replica's, read after
        its write); False when `timeout` seconds pass first."""
        with self._synced:
            return self._synced.wait_for(lambda: self.watermark >= watermark, timeout)

    def append_vector(self, db, kind: str, ref: str, vector: np.ndarray) -> None:
        """One writer at a time appends, until its commit: ids then commit in increasing order, so
        a watermark never passes an id that is still to become visible."""
        self.store.lock(db, "vectors")
        db.execute("INSERT INTO vectors (kind, ref, vector) VALUES (?, ?, ?)", (kind, ref, vector.tobytes()))
        self.store.notify(db)

    def flush(self) -> None:
        if self.index.dirty:
            self.index.save()

    def close(self) -> None:
        """Stop following other replicas and save the index."""
        self._stop_watching.set()
        if self._watcher is not None:
            self._watcher.join()
        self.flush()
