"""A deterministic scripted model — for unit tests only. It never runs a real model."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import copy
import re
import time
from collections import deque
from collections.abc import Callable

from jitagent.common.usage import Usage
from jitagent.models.base import Generation


class ScriptedModel:
    """Replies from a list (in order, the last one repeating) or from a function of the messages.

    Tokens are counted as whitespace-separated words, so cost accounting can be tested. `latency_s`:
    each call waits that long first, like a call to a model server on another host (load tests)."""

    def __init__(self, replies: list[str] | Callable[[list[dict]], str], name: str = "scripted",
                 latency_s: float = 0.0):
        self.name = name
        self._replies = replies
        self.latency_s = latency_s
        self.calls: deque[dict] = deque(maxlen=10_000)  # bounded: a long-lived server keeps no more

    wants_schema = False  # a reply function that takes (messages, json_schema)

    def with_adapter(self, adapter) -> ScriptedModel:
        """The same replies under the adapter's name (`calls` shared): a test sees which calls ran with it."""
        adapted = copy.copy(self)
        adapted.name = f"{self.name}@{adapter.id}"
        return adapted

    def _next(self, messages: list[dict], json_schema: dict | None) -> str:
        if callable(self._replies):
            return self._replies(messages, json_schema) if self.wants_schema else self._replies(messages)
        index = min(len(self.calls) - 1, len(self._replies) - 1)
        return self._replies[index]

    async def complete(self, messages, *, max_tokens=256, temperature=0.0, seed=None, stop=None,
                       json_schema=None, n=1, cancel=None, tools=None) -> Generation:
        start = time.monotonic()
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        texts = []
        for _ in range(n):
            self.calls.append({"messages": messages, "json_schema": json_schema, "temperature": temperature,
                               "seed": seed, "stop": stop, "model": self.name, "tools": tools})
            text = self._next(messages, json_schema)
            for s in stop or []:
                if s in text:
                    text = text[: text.index(s)]
            texts.append(text)
        prompt = sum(len(m["content"].split()) for m in messages)
        return Generation(texts, Usage(prompt * n, sum(len(t.split()) for t in texts)),
                          time.monotonic() - start, self.name, ["stop"] * n)


MARKUP = re.compile(r"\b(\w+)=(\[[^\]]*\]|[^,\]\s]+)")


def said(messages: list[dict]) -> dict:
    """The `key=value` settings the last message shows first (a synthesis prompt's first reference), read
    as values: what a model that keeps its reference's fields would write."""
    found: dict = {}
    for key, text in MARKUP.findall(messages[-1]["content"] if messages else ""):
        with contextlib.suppress(ValueError, SyntaxError):
            found.setdefault(key, ast.literal_eval(text) if text[0] in "[0123456789" else text)
    return found


def schema_example(schema: dict, shown: dict | None = None):
    """The smallest value a JSON schema accepts (first enum value, required keys only); an object's
    property takes the value `shown` gives it where the schema accepts that value."""
    if "anyOf" in schema:
        return schema_example(schema["anyOf"][0])
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        props, shown = schema.get("properties", {}), shown or {}
        return {k: shown[k] if k in shown and _accepts(props.get(k, {}), shown[k])
                else schema_example(props.get(k, {"type": "string"})) for k in schema.get("required", [])}
    if kind == "array":
        return [schema_example(schema["items"])] if schema.get("items", {}).get("enum") else []
    if kind == "integer":
        return max(1, schema.get("minimum", 1))
    if kind == "number":
        return 0.0
    if kind == "boolean":
        return False
    return "x"


def _accepts(schema: dict, value) -> bool:
    """Whether `value` is of the schema's type and among its enum (an array's items among theirs)."""
    if "enum" in schema:
        return value in schema["enum"]
    if schema.get("type") == "array":
        return isinstance(value, list) and all(_accepts(schema.get("items", {}), v) for v in value)
    return isinstance(value, {"string": str, "integer": int}.get(schema.get("type"), object))


def instant_model(latency_s: float = 0.0) -> ScriptedModel:
    """A scripted model for load tests and examples: schema-valid JSON when a schema is asked for (an edit
    that keeps its first reference's fields, so that it is coherent), a program printing 0 after a code
    prefill, else the final answer 0, after `latency_s`. Never a stand-in for a real model in a result."""
    import json

    def reply(messages: list[dict], schema: dict | None = None) -> str:
        if schema:
            return json.dumps(schema_example(schema, said(messages)))
        if messages and messages[-1]["role"] == "assistant" and messages[-1]["content"].startswith("```"):
            return "print(0)\n```"  # a code prefill: the program that prints the answer
        return "Final answer: 0"
    model = ScriptedModel(reply, name="scripted-instant", latency_s=latency_s)
    model.wants_schema = True
    return model
