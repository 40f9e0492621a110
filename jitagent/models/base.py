"""One small async interface for every model back-end, counting tokens and latency."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from jitagent.common.usage import Usage


@dataclass
class Generation:
    """N completions from one request; usage and wall time are for the whole request."""

    texts: list[str]
    usage: Usage
    wall_s: float
    model: str
    finish_reasons: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.texts[0]


UNKNOWN_USAGE = Usage(None, None)


class Cancelled(Exception):
    """Generation stopped because the caller cancelled or its deadline passed. `usage`: what the request
    had used when it stopped (unknown unless the back-end can tell: work was done, and it is not 0)."""

    def __init__(self, message: str = "", usage: Usage = UNKNOWN_USAGE):
        super().__init__(message)
        self.usage = usage


class ModelError(Exception):
    """A model back-end failed; the message says how."""


class CancelToken:
    """Checked between batches, graph nodes and tokens so a cancelled request stops generating."""

    def __init__(self, deadline: float | None = None):
        self._event = threading.Event()
        self.deadline = deadline

    def cancel(self) -> None:
        self._event.set()

    def tighten(self, *deadlines: float | None) -> CancelToken:
        """The earliest of its deadline and these (monotonic; None: none); a deadline never loosens."""
        self.deadline = min((d for d in (self.deadline, *deadlines) if d is not None), default=None)
        return self

    def is_cancelled(self) -> bool:  # asked between the nodes of a batch: hundreds of times a second
        return self._event.is_set() or (self.deadline is not None and time.monotonic() > self.deadline)


@dataclass(frozen=True, kw_only=True)
class Adapter:
    """LoRA weights a model runs with on top of its base: an embedded model loads `path` (a GGUF LoRA); an
    HTTP back-end is asked for the model it serves the adapter under (`served_name`: vLLM's
    `--lora-modules NAME=DIR`, a llama.cpp server's model alias)."""

    id: str
    served_name: str
    path: Path


class ModelClient(Protocol):
    name: str

    def with_adapter(self, adapter: Adapter) -> ModelClient:
        """The same model running with `adapter` (the client itself is left as it is)."""
        ...

    async def complete(self, messages: list[dict], *, max_tokens: int = 256, temperature: float = 0.0,
                       seed: int | None = None, stop: list[str] | None = None,
                       json_schema: dict | None = None,
                       n: int = 1, cancel: CancelToken | None = None,
                       tools: list[dict] | None = None) -> Generation:
        """Chat completion. A final assistant message is a prefill: the reply continues it
        (the returned text excludes the prefill). `json_schema` constrains the output. `tools` (OpenAI's
        shape): functions the model's own chat template renders; calls come back in the text."""
        ...


def base_model(model: ModelClient) -> str:
    """The weights a client runs, as adapters name their base: an embedded model's name, the model an HTTP
    back-end serves (`URL#model`), else the client's name."""
    return getattr(model, "model", None) or model.name


CHATML_STOP = ["<|im_end|>", "<|endoftext|>", "<|im_start|>"]


def render_chatml(messages: list[dict]) -> str:
    """ChatML prompt; an assistant message at the end is left open so the model continues it."""
    parts = []
    for i, m in enumerate(messages):
        is_prefill = i == len(messages) - 1 and m["role"] == "assistant"
        parts.append(f"<|im_start|>{m['role']}\n{m['content']}" + ("" if is_prefill else "<|im_end|>\n"))
    if not messages or messages[-1]["role"] != "assistant":
        parts.append("<|im_start|>assistant\n")
    return "".join(parts)
