"""A llama.cpp context whose evaluation can be stopped between batches.

llama-cpp-python's `Llama.eval` feeds a prompt in batches of `n_batch` tokens in one uninterrupted
loop: a prompt of a few thousand tokens is tens of seconds of prefill on 2 cores, past any deadline.
Here each batch is a call of its own, with `interrupt` called before it (and before each generated
token, which is evaluated the same way); whatever it raises ends the prefill there. The tokens
evaluated so far stay in the KV cache: the next request with the same prefix starts after them.
Imported only with llama_cpp (heavy).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from jitagent.models.grammar_sampling import FastGrammarLlama


class InterruptibleLlama(FastGrammarLlama):
    interrupt: Callable[[], None] | None = None  # set for one request; raises to stop it

    def eval(self, tokens: Sequence[int]) -> None:
        for start in range(0, len(tokens), self.n_batch):
            if self.interrupt is not None:
                self.interrupt()
            super().eval(tokens[start:start + self.n_batch])
