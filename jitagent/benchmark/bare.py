"""The `bare` arm: the solver's weights served the way their users serve them, with no harness — the same GGUF
through llama-cpp-python's chat completion, its own chat template rendering the task's messages and client
tools, the reply parsed as leniently as serving stacks parse it (`<tool_call>` tags, fenced or bare JSON).
What jitagent adds is measured against this, not against a strict parser that scores a fenced call 0.

Greedy decoding (temperature 0) and at most MAX_TOKENS a reply; the run is not verified here (the stream
checks it as every arm's answer is checked)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import time

from jitagent.runtime.events import Cost, RunResult, Trajectory
from jitagent.tasks.task import Task

MAX_TOKENS = 512
N_CTX = 4096
TAGGED = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.S)
FENCED = re.compile(r"```[a-zA-Z]*\n?(.*?)```", re.S)


def parsed_calls(reply: str) -> list[dict]:
    """The calls a reply makes, each {"name", "arguments"}: inside `<tool_call>` tags if it has any, else
    inside fenced blocks, else the reply itself as JSON — an object or a list of them, one after another,
    with `arguments` (or `parameters`) an object or a JSON string of one. [] where none reads as a call."""
    for pattern in (TAGGED, FENCED):
        blocks = pattern.findall(reply)
        if blocks:
            return [call for block in blocks for call in _calls(block)]
    return _calls(reply)


def _calls(text: str) -> list[dict]:
    calls = []
    for value in _json_values(text):
        for item in value if isinstance(value, list) else [value]:
            if not (isinstance(item, dict) and isinstance(item.get("name"), str)):
                continue
            arguments = item.get("arguments", item.get("parameters", {}))
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except ValueError:
                    continue
            if isinstance(arguments, dict):
                calls.append({"name": item["name"], "arguments": arguments})
    return calls


def _json_values(text: str) -> list:
    """The JSON values in `text` one after another (separated by blanks or commas); stops at the first
    thing that is not one."""
    decoder, values, at = json.JSONDecoder(), [], 0
    while True:
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
        if at >= len(text):
            return values
        try:
            value, at = decoder.raw_decode(text, at)
        except ValueError:
            return values
        values.append(value)


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
        calls = parsed_calls(reply) if tools else []
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
