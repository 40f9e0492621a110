"""The `bare` arm: the solver's weights served the way their users serve them, with no harness — the same GGUF
through llama-cpp-python's chat completion, its own chat template rendering the task's messages and client
tools, the reply's calls read as leniently as serving stacks read them (`<tool_call>` tags, fenced or bare
JSON). What jitagent adds is measured against this, not against a strict parser that scores a fenced call 0.

Greedy decoding (temperature 0) and at most MAX_TOKENS a reply; the run is not verified here (the stream
checks it as every arm's answer is checked)."""

from __future__ import annotations

import asyncio
import os
import time

from jitagent.runtime import client_calls
from jitagent.runtime.events import Cost, RunResult, Trajectory
from jitagent.tasks.task import ClientTool, Task

MAX_TOKENS = 512
N_CTX = 4096


def parsed_calls(reply: str, tools: list[ClientTool]) -> list[dict]:
    """The calls a reply makes, read by the reader every harness's replies are read by
    (`runtime.client_calls.read`: objects in `<tool_call>` tags, fenced or bare, or a ReAct action), so the
    arms differ by the harness, not the parser; nothing is repaired or held to its schema."""
    return [{"name": call.tool, "arguments": call.args} for call in client_calls.read(reply, tools)]


class BareModel:
    """One GGUF served as llama-cpp-python serves it; loaded on first use."""

    def __init__(self, path: str):
        self.path = path
        self._llm = None

    async def run(self, task: Task) -> RunResult:
        """The task's text as the user's message, its client tools as the request's tools."""
        start = time.monotonic()
        tools = [{"type": "function", "function": tool.model_dump(exclude_none=True)}
                 for tool in task.client_tools]
        out = await asyncio.to_thread(self._complete, [{"role": "user", "content": task.prompt}], tools)
        reply = out["choices"][0]["message"].get("content") or ""
        usage = out["usage"]
        calls = parsed_calls(reply, task.client_tools)
        cost = Cost(prompt_tokens=usage["prompt_tokens"], completion_tokens=usage["completion_tokens"],
                    wall_s=time.monotonic() - start)
        return RunResult(task_id=task.id, harness_id="bare", answer=None if calls else reply, passed=None,
                         reward=None, verdict="", cost=cost,
                         trajectory=Trajectory(messages=[{"role": "assistant", "content": reply}]),
                         client_calls=calls)

    def _complete(self, messages: list[dict], tools: list[dict]) -> dict:
        if self._llm is None:
            from llama_cpp import Llama  # heavy: only where the arm runs

            self._llm = Llama(model_path=self.path, n_ctx=N_CTX, n_threads=os.cpu_count() or 2, n_batch=256,
                              verbose=False)
        return self._llm.create_chat_completion(messages=messages, tools=tools or None, temperature=0.0,
                                                max_tokens=MAX_TOKENS)
