"""Model clients behind one async interface; heavy back-ends are imported only when named."""

from __future__ import annotations

import os

from jitagent.common.usage import Usage
from jitagent.models.base import Cancelled, CancelToken, Generation, ModelClient, ModelError
from jitagent.models.gguf import DEFAULT_MODEL, MODEL_NAMES

__all__ = ["API_KEY_ENV", "CancelToken", "Cancelled", "Generation", "ModelClient", "ModelError", "Usage",
           "load_model", "DEFAULT_MODEL", "MODEL_CHOICES", "MODEL_NAMES"]


API_KEY_ENV = "JITAGENT_API_KEY"
# what a model option takes, for its help and load_model's error alike
MODEL_CHOICES = " | ".join(("embedded", *MODEL_NAMES, "http(s)://HOST:PORT[#model] (OpenAI-compatible)"))


def load_model(spec: str = "embedded", slot: str = "default", api_key: str | None = None) -> ModelClient:
    """`embedded` (the default model), a model name (`qwen2.5-coder-0.5b`, `qwen2.5-coder-1.5b`,
    `smollm2-135m`), an OpenAI-compatible URL (optionally `URL#model`), or `scripted` (instant canned
    replies, for load tests only; `scripted:MS` waits MS milliseconds per call, like a model server on
    another host).
    `slot`: an embedded model's own llama.cpp context (see EmbeddedModel).
    `api_key`: sent to an OpenAI-compatible endpoint as a bearer token (default: $JITAGENT_API_KEY)."""
    if spec in ("embedded", "default"):
        spec = DEFAULT_MODEL
    if spec in MODEL_NAMES:
        from jitagent.models.embedded import EmbeddedModel
        return EmbeddedModel(spec, slot=slot)
    if spec == "scripted" or spec.startswith("scripted:"):  # canned: for load tests and examples only
        from jitagent.models.scripted import instant_model
        return instant_model(scripted_latency(spec))
    if spec.startswith(("http://", "https://")):
        from jitagent.models.openai_http import OpenAICompatibleModel
        url, _, model = spec.partition("#")
        return OpenAICompatibleModel(url, model or None,
                                     api_key=api_key or os.environ.get(API_KEY_ENV) or None)
    raise ValueError(f"unknown model {spec!r}: use {MODEL_CHOICES}")


def scripted_latency(spec: str) -> float:
    """Seconds per call of `scripted:MS` (0 for `scripted`); ValueError names a bad MS."""
    _, _, ms = spec.partition(":")
    try:
        latency = float(ms or 0) / 1000
    except ValueError:
        raise ValueError(f"model {spec!r}: scripted:MS takes a number of milliseconds") from None
    if not 0 <= latency <= 600:
        raise ValueError(f"model {spec!r}: scripted:MS takes 0 to 600000 milliseconds")
    return latency
