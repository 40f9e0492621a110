"""Model clients behind one async interface; heavy back-ends are imported only when named."""

from __future__ import annotations

import os

from jitagent.models.base import Cancelled, CancelToken, Generation, ModelClient, ModelError
from jitagent.models.gguf import DEFAULT_MODEL, MODEL_NAMES
from jitagent.usage import Usage

__all__ = ["API_KEY_ENV", "CancelToken", "Cancelled", "Generation", "ModelClient", "ModelError", "Usage",
           "load_model", "DEFAULT_MODEL", "MODEL_NAMES"]


API_KEY_ENV = "JITAGENT_API_KEY"


def load_model(spec: str = "embedded", slot: str = "default", api_key: str | None = None) -> ModelClient:
    """`embedded` (the default model), a model name (`qwen2.5-coder-0.5b`, `smollm2-135m`),
    an OpenAI-compatible URL (optionally `URL#model`), or `scripted` (instant canned replies,
    for load tests only). `slot`: an embedded model's own llama.cpp context (see EmbeddedModel).
    `api_key`: sent to an OpenAI-compatible endpoint as a bearer token (default: $JITAGENT_API_KEY)."""
    if spec in ("embedded", "default"):
        spec = DEFAULT_MODEL
    if spec in MODEL_NAMES:
        from jitagent.models.embedded import EmbeddedModel
        return EmbeddedModel(spec, slot=slot)
    if spec == "scripted":  # instant and canned: for load tests and examples only
        from jitagent.models.scripted import instant_model
        return instant_model()
    if spec.startswith(("http://", "https://")):
        from jitagent.models.openai_http import OpenAICompatibleModel
        url, _, model = spec.partition("#")
        return OpenAICompatibleModel(url, model or None,
                                     api_key=api_key or os.environ.get(API_KEY_ENV) or None)
    raise ValueError(f"unknown model {spec!r}: use 'embedded', one of {list(MODEL_NAMES)}, or an http(s) URL")
