"""A deterministic scripted model — for unit tests only. It never runs a real model."""

from __future__ import annotations

import time
from collections.abc import Callable

from jitagent.models.base import Generation, Usage


class ScriptedModel:
    """Replies from a list (in order, the last one repeating) or from a function of the messages.

    Tokens are counted as whitespace-separated words, so cost accounting can be tested."""

    def __init__(self, replies: list[str] | Callable[[list[dict]], str], name: str = "scripted"):
        self.name = name
        self._replies = replies
        self.calls: list[dict] = []

    def _next(self, messages: list[dict]) -> str:
        if callable(self._replies):
            return self._replies(messages)
        index = min(len(self.calls) - 1, len(self._replies) - 1)
        return self._replies[index]

    async def complete(self, messages, *, max_tokens=256, temperature=0.0, seed=None, stop=None,
                       json_schema=None, n=1, cancel=None) -> Generation:
        start = time.monotonic()
        texts = []
        for _ in range(n):
            self.calls.append({"messages": messages, "json_schema": json_schema, "temperature": temperature, "seed": seed})
            text = self._next(messages)
            for s in stop or []:
                if s in text:
                    text = text[: text.index(s)]
            texts.append(text)
        prompt = sum(len(m["content"].split()) for m in messages)
        return Generation(texts, Usage(prompt * n, sum(len(t.split()) for t in texts)),
                          time.monotonic() - start, self.name, ["stop"] * n)
