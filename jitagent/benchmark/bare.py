"""The `bare` arm: the solver's weights served the way their users serve them, with no harness — the same
GGUF through llama-cpp-python's chat completion, its own chat template rendering the task's messages and
client tools, the reply's calls read as leniently as serving stacks read them (`<tool_call>` tags, fenced
or bare JSON). What jitagent adds is measured against this, not against a strict parser that scores a
fenced call 0.

Greedy decoding (temperature 0), at most MAX_TOKENS a reply, stopped at the unit's budget as every arm is;
the run is not verified here (the stream checks it as every arm's answer is checked)."""

from __future__ import annotations

import asyncio
import os
import time

from jitagent.runtime import client_calls
from jitagent.runtime.events import Cost, RunResult, Trajectory
from jitagent.tasks.task import ClientTool, Task

MAX_TOKENS = 512


def parsed_calls(reply: str, tools: list[ClientTool], said: str = "") -> list[dict]:
    """The calls a reply makes, read by the reader every harness's replies are read by
    (`runtime.client_calls.read`: objects in `<tool_call>` tags, fenced or bare, a ReAct action, the
    conversation's own notation, or Python calls with literal arguments), so the arms differ by the harness,
    not the parser; nothing is repaired or held to its schema."""
    return [{"name": call.tool, "arguments": call.args} for call in client_calls.read(reply, tools, said)]


class BareModel:
    """One GGUF served as llama-cpp-python serves it (loaded on first use), stopped at the unit's budget."""

    def __init__(self, path: str, n_ctx: int):
        self.path, self.n_ctx = path, n_ctx
        self._llm = None

    async def run(self, task: Task, budget_s: float, messages: list[dict] | None = None) -> RunResult:
        """The task's text as the user's message (`messages`: the conversation so far instead, in OpenAI's
        shape, as a client holding it sends it), its client tools as the request's tools. A failure (a
        prompt past the context, say) is the unit's error, as the runtime makes a model's failure."""
        from jitagent.models.interruptible import Interrupted

        await asyncio.to_thread(self._load)
        start = time.monotonic()
        tools = client_calls.openai_tools(task.client_tools)
        self._llm.stopping = lambda: time.monotonic() >= start + budget_s
        try:
            out = await asyncio.to_thread(self._llm.create_chat_completion, temperature=0.0,
                                          messages=messages or [{"role": "user", "content": task.prompt}],
                                          tools=tools or None, max_tokens=MAX_TOKENS)
        except (Interrupted, ValueError, RuntimeError) as exc:  # llama-cpp-python's failures are these
            out_of_time = isinstance(exc, Interrupted)
            return self._result(task, "", None, time.monotonic() - start, interrupted=out_of_time,
                                error=None if out_of_time else f"{type(exc).__name__}: {exc}")
        finally:
            self._llm.stopping = None
        reply = out["choices"][0]["message"].get("content") or ""
        return self._result(task, reply, out["usage"], time.monotonic() - start)

    def _load(self) -> None:
        if self._llm is None:
            from jitagent.models.interruptible import InterruptibleLlama  # heavy: only where the arm runs

            self._llm = InterruptibleLlama(model_path=self.path, n_ctx=self.n_ctx, n_batch=256,
                                           n_threads=os.cpu_count() or 2, verbose=False)

    @staticmethod
    def _result(task: Task, reply: str, usage: dict | None, wall_s: float, interrupted: bool = False,
                error: str | None = None) -> RunResult:
        """The reply as a run: its calls, else its text as the answer; tokens unknown where it failed."""
        calls = parsed_calls(reply, task.client_tools, task.prompt)
        cost = Cost(prompt_tokens=usage["prompt_tokens"] if usage else None,
                    completion_tokens=usage["completion_tokens"] if usage else None, wall_s=wall_s)
        return RunResult(task_id=task.id, harness_id="bare", answer=None if calls or not reply else reply,
                         passed=None, reward=None, verdict="", cost=cost, error=error,
                         interrupted=interrupted, client_calls=calls,
                         trajectory=Trajectory(messages=[{"role": "assistant", "content": reply}]))
