"""OpenAI-compatible HTTP client: `vllm serve`, llama.cpp's servers, any compatible endpoint.

Structured output dialects differ: vLLM and llama.cpp's C++ server take
`response_format: {"type": "json_schema", ...}`; llama-cpp-python's server rejects that and
takes `{"type": "json_object", "schema": ...}`. With dialect `auto` the client tries the
first and falls back to the second once, remembering what worked. A reply that is not JSON
with the schema's required keys raises: a server that silently ignores the schema must not
pass for one that honours it.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import time
from typing import Literal

import httpx

from jitagent.common.usage import Usage
from jitagent.models.base import (
    CHATML_STOP,
    Adapter,
    Cancelled,
    CancelToken,
    Generation,
    ModelError,
    render_chatml,
)


class SchemaIgnored(ModelError):
    """The server returned output that does not follow the requested JSON schema."""


class Unreachable(ModelError):
    """Nothing answers at the server's address."""


class Rejected(ModelError):
    """The server answered a request with an HTTP error status."""


class OpenAICompatibleModel:
    def __init__(self, base_url: str, model: str | None = None, *,
                 dialect: Literal["auto", "json_schema", "json_object"] = "auto",
                 prefill: Literal["chatml", "continue_final_message"] = "chatml",
                 api_key: str | None = None, timeout_s: float = 300.0):
        self.base_url = base_url.rstrip("/").removesuffix("/v1")
        self.model = model
        self.name = f"openai:{self.base_url}" + (f"/{model}" if model else "")
        self.dialect = dialect
        self.prefill = prefill
        self.timeout_s = timeout_s
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._n_supported: bool | None = None

    def with_adapter(self, adapter: Adapter) -> OpenAICompatibleModel:
        """The same server asked for the model it serves the adapter under (vLLM `--lora-modules`, a llama.cpp
        server's alias)."""
        adapted = copy.copy(self)
        adapted.model, adapted.name = adapter.served_name, f"openai:{self.base_url}/{adapter.served_name}"
        return adapted

    async def complete(self, messages, *, max_tokens=256, temperature=0.0, seed=None, stop=None,
                       json_schema=None, n=1, cancel: CancelToken | None = None,
                       tools: list[dict] | None = None) -> Generation:
        start = time.monotonic()
        deadline = start + self.timeout_s
        if cancel is not None and cancel.deadline is not None:
            deadline = min(deadline, cancel.deadline)
        async with httpx.AsyncClient(headers=self._headers) as http:
            try:
                texts, finishes, usage = await self._request(http, messages, max_tokens, temperature, seed,
                                                             stop, json_schema, n, deadline, tools)
                # a server that ignores `n` returns one choice: ask again, one seed each
                while len(texts) < n:
                    self._n_supported = False
                    more, fin, used = await self._request(http, messages, max_tokens, temperature,
                                                          None if seed is None else seed + len(texts), stop,
                                                          json_schema, 1, deadline, tools)
                    texts += more
                    finishes += fin
                    usage = usage + used
            except TimeoutError as exc:  # the run's deadline, not the server's slowness: cancelled
                if cancel is not None and cancel.is_cancelled():
                    raise Cancelled(str(exc)) from None  # what the server used is unknown
                raise
        if json_schema:
            for text in texts:
                _check_schema(text, json_schema)
        return Generation(texts, usage, time.monotonic() - start, self.name, finishes)

    async def _request(self, http, messages, max_tokens, temperature, seed, stop, json_schema, n, deadline,
                       tools):
        body: dict = {"max_tokens": max_tokens, "temperature": temperature}
        if self.model:
            body["model"] = self.model
        if seed is not None:
            body["seed"] = seed
        if n > 1 and self._n_supported is not False:
            body["n"] = n
        prefilled = messages and messages[-1]["role"] == "assistant"
        if prefilled and self.prefill == "chatml" and not json_schema and not tools:
            path = "/v1/completions"
            body["prompt"] = render_chatml(messages)
            body["stop"] = CHATML_STOP + list(stop or [])
        else:
            path = "/v1/chat/completions"
            body["messages"] = messages
            if stop:
                body["stop"] = list(stop)
            if prefilled:
                body.update(continue_final_message=True, add_generation_prompt=False)
            if tools:  # rendered by the server's chat template; its parser may return the calls apart
                body["tools"] = tools
        if json_schema:
            return await self._structured(http, path, body, json_schema, deadline)
        return _parse(await self._post(http, path, body, deadline), path)

    async def _structured(self, http, path, body, schema, deadline):
        dialects = [self.dialect] if self.dialect != "auto" else ["json_schema", "json_object"]
        last_error = None
        for dialect in dialects:
            fmt = ({"type": "json_schema",
                    "json_schema": {"name": "output", "schema": schema, "strict": True}}
                   if dialect == "json_schema" else {"type": "json_object", "schema": schema})
            try:
                reply = await self._post(http, path, {**body, "response_format": fmt}, deadline)
            except Rejected as exc:  # perhaps the dialect; a server that is not there is not asked twice
                last_error = exc
                continue
            self.dialect = dialect  # remember what this server speaks
            return _parse(reply, path)
        raise ModelError(f"{self.name}: no structured-output dialect accepted: {last_error}")

    async def _post(self, http, path, body, deadline: float) -> dict:
        """One request, given the time left before `deadline` (monotonic) and not a moment more: httpx's
        own timeouts bound each read, not the whole response."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"{self.name}{path}: no time left before the deadline")
        try:
            async with asyncio.timeout(left):
                response = await http.post(self.base_url + path, json=body, timeout=left)
        except (httpx.TimeoutException, TimeoutError) as exc:
            raise TimeoutError(f"{self.name}{path}: no reply within the {left:.1f} s left") from exc
        except httpx.ConnectError as exc:
            raise Unreachable(f"cannot reach the model server at {self.base_url} "
                              f"({exc or 'connection failed'}); "
                              "is it running, and is the URL right?") from None
        except httpx.HTTPError as exc:
            raise ModelError(f"{self.name}{path}: {type(exc).__name__}: {exc}") from exc
        if response.status_code in (401, 403):
            raise Rejected(f"{self.name}{path}: HTTP {response.status_code}: the server wants an API key "
                           f"(--api-key-file FILE or JITAGENT_API_KEY): {response.text[:200]}")
        if response.status_code >= 400:
            raise Rejected(f"{self.name}{path}: HTTP {response.status_code}: {response.text[:500]}")
        try:
            return response.json()
        except json.JSONDecodeError:
            raise ModelError(f"{self.name}{path}: response is not JSON: {response.text[:200]}") from None


def _parse(payload: dict, path: str):
    choices = payload.get("choices") or []
    if not choices:
        raise ModelError(f"{path}: response has no choices: {str(payload)[:200]}")
    if path.endswith("/completions") and "chat" not in path:
        texts = [c.get("text", "") for c in choices]
    else:
        texts = [_reply_text(c.get("message") or {}) for c in choices]
    usage = payload.get("usage") or {}
    return (texts, [c.get("finish_reason") or "" for c in choices],
            Usage(usage.get("prompt_tokens"), usage.get("completion_tokens")))


def _reply_text(message: dict) -> str:
    """A chat reply as text: its content, then any calls the server's tool parser took out of it, written
    back in the `<tool_call>` form chat templates ask for, so one reader reads every back-end's calls."""
    content = message.get("content") or ""
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        arguments = function.get("arguments")
        with contextlib.suppress(ValueError):  # OpenAI sends a JSON string; one that is not is kept as sent
            arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
        calls.append("<tool_call>\n" + json.dumps({"name": function.get("name"), "arguments": arguments})
                     + "\n</tool_call>")
    return "\n".join([content, *calls]).strip() if calls else content


def _check_schema(text: str, schema: dict) -> None:
    try:
        value = json.loads(text)
    except ValueError:  # not JSON, or an integer past Python's 4,300 digits
        raise SchemaIgnored(f"server ignored the JSON schema: reply is not JSON: {text[:200]!r}") from None
    if schema.get("type") == "object":
        if not isinstance(value, dict):
            raise SchemaIgnored(f"server ignored the JSON schema: expected an object, got {text[:200]!r}")
        missing = [k for k in schema.get("required", []) if k not in value]
        if missing:
            raise SchemaIgnored(f"server ignored the JSON schema: required keys {missing} missing in "
                                f"{text[:200]!r}")
