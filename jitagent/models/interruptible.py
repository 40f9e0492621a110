"""A llama.cpp context whose evaluation stops when its request is to stop, within milliseconds.

llama-cpp-python's `Llama.eval` feeds a prompt in batches of `n_batch` tokens in one uninterrupted
loop: a prompt of a few thousand tokens is tens of seconds of prefill on 2 cores, and one batch alone
took 45 s on a loaded machine. Here `stopping` is asked before each batch (and each generated token,
evaluated the same way) and, through llama.cpp's abort callback, between the nodes of a batch's
compute graph; llama.cpp then drops the cut batch from the KV cache (saying so on stderr), so what
was evaluated before it stays cached and the next request with the same prefix starts after it.
Imported only with llama_cpp (heavy).
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path

from llama_cpp import llama_cpp as C

from jitagent.models.grammar_sampling import FastGrammarLlama

_set_abort_callback = C._lib.llama_set_abort_callback  # exported by libllama, not bound by llama_cpp
_set_abort_callback.argtypes = [ctypes.c_void_p, C.ggml_abort_callback, ctypes.c_void_p]
_set_abort_callback.restype = None


class Interrupted(Exception):
    """Evaluation stopped because `stopping` said so; the context is consistent."""


class AdapterError(RuntimeError):
    """llama.cpp could not load or set a LoRA adapter (a file of another base model, say)."""


class InterruptibleLlama(FastGrammarLlama):
    stopping: Callable[[], bool] | None = None  # set for one request; True once it is to stop
    # A server that retrains online meets new adapters for as long as it runs: keep the most recently
    # used few loaded (each is its LoRA's weights in memory), free the rest.
    max_loaded_adapters = 4

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # kept on self: llama.cpp holds only a pointer to it
        self._abort = C.ggml_abort_callback(lambda _data: self._stops())
        _set_abort_callback(self._ctx.ctx, self._abort, None)
        self._adapters: OrderedDict[Path, object] = OrderedDict()  # least recently used first
        self._adapter: Path | None = None
        # runs before the context and model are freed (the stack is LIFO); the adapter the context runs
        # with goes with the model, as llama.cpp frees what was not freed by hand
        self._stack.callback(self._free_adapters)

    def use_adapter(self, path: Path | None) -> None:
        """Run the next requests with the GGUF LoRA at `path` (None: the base model alone). The cached
        prompt was computed with the other weights, so it is dropped when the adapter changes."""
        if path is not None:
            self._load_adapter(path)
        if path == self._adapter:
            return
        if path is None:
            status = C.llama_set_adapters_lora(self._ctx.ctx, None, 0, None)
        else:
            chosen = (C.llama_adapter_lora_p_ctypes * 1)(self._adapters[path])
            status = C.llama_set_adapters_lora(self._ctx.ctx, chosen, 1, (ctypes.c_float * 1)(1.0))
        if status:
            self._free_adapters(keep=self.max_loaded_adapters)
            raise AdapterError(f"llama.cpp could not set the adapter {path}")
        self._adapter = path
        self.reset()
        self._free_adapters(keep=self.max_loaded_adapters)

    def _load_adapter(self, path: Path) -> None:
        if path in self._adapters:
            self._adapters.move_to_end(path)
            return
        adapter = C.llama_adapter_lora_init(self._model.model, str(path).encode())
        if not adapter:
            raise AdapterError(f"llama.cpp could not load the adapter {path.name} for this model")
        self._adapters[path] = adapter

    def _free_adapters(self, keep: int = 0) -> None:
        """Free the least recently used adapters beyond `keep`, never the one the context runs with."""
        for path in [p for p in self._adapters if p != self._adapter][:max(0, len(self._adapters) - keep)]:
            C.llama_adapter_lora_free(self._adapters.pop(path))

    def _stops(self) -> bool:
        return self.stopping is not None and self.stopping()

    def eval(self, tokens: Sequence[int]) -> None:
        for start in range(0, len(tokens), self.n_batch):
            if self._stops():
                raise Interrupted
            try:
                super().eval(tokens[start:start + self.n_batch])
            except RuntimeError:  # "llama_decode returned 2": aborted by the callback
                if self._stops():
                    raise Interrupted from None
                raise
