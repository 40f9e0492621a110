"""The faiss index over harness descriptions and task experiences (ids are the DB's vector ids).

HNSW (M=32) inside an IndexIDMap2: the benchmark in bench/bank_retrieval.py picked it
(p99 well under 5 ms at 100k vectors where a flat index is ~10x slower). Vectors are never
removed (losers stay in the lineage), so HNSW's lack of removal costs nothing. Adds and searches
take one lock: a faiss search must not run during an add, and a replica that follows a shared bank
adds from its own thread (an HNSW search holds it well under a millisecond). Without a path the
index lives in memory only.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import faiss
import numpy as np

from harness_bank.embedder import DIM


def as_matrix(blobs: list[bytes]) -> np.ndarray:
    """Vectors as the database stores them (float32 bytes), one per row; (0, DIM) for none."""
    return (np.stack([np.frombuffer(b, dtype=np.float32) for b in blobs]) if blobs
            else np.zeros((0, DIM), np.float32))


def new_index(kind: str = "hnsw") -> faiss.Index:
    if kind == "flat":
        inner = faiss.IndexFlatIP(DIM)
    elif kind == "hnsw":
        inner = faiss.IndexHNSWFlat(DIM, 32, faiss.METRIC_INNER_PRODUCT)
        inner.hnsw.efConstruction = 80
        inner.hnsw.efSearch = 64
    else:
        raise ValueError(f"unknown index kind {kind!r}: flat or hnsw")
    return faiss.IndexIDMap2(inner)


class VectorIndex:
    def __init__(self, path: Path | None, kind: str = "hnsw"):
        self.path = path
        self.kind = kind
        self._lock = threading.Lock()
        self.index = faiss.read_index(str(path)) if path is not None and path.exists() else new_index(kind)
        self.dirty = False

    @property
    def size(self) -> int:
        return self.index.ntotal

    def vector(self, vid: int) -> np.ndarray:
        with self._lock:
            return self.index.reconstruct(vid)

    def ids(self) -> set[int]:
        ids = faiss.vector_to_array(self.index.id_map) if self.index.ntotal else np.array([], dtype=np.int64)
        return set(int(i) for i in ids)

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        with self._lock:
            self.index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32),
                                    np.asarray(ids, dtype=np.int64))
            self.dirty = True

    def search(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        query = np.ascontiguousarray(vector.reshape(1, -1), dtype=np.float32)
        with self._lock:
            if self.index.ntotal == 0:
                return []
            scores, ids = self.index.search(query, min(k, self.index.ntotal))
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0]) if i != -1]

    def rebuild(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        fresh = new_index(self.kind)
        if len(ids):
            fresh.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32),
                               np.asarray(ids, dtype=np.int64))
        with self._lock:
            self.index = fresh
            self.dirty = True

    def save(self) -> None:
        if self.path is None:
            return
        with self._lock:
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")  # replicas may share one cache file
            faiss.write_index(self.index, str(tmp))
            tmp.replace(self.path)  # atomic: a crash never leaves a half-written index
            self.dirty = False
