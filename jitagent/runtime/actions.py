"""A: actions, how a model reply becomes a tool call or the answer. One class per kind."""

from __future__ import annotations

from typing import ClassVar

from jitagent.harness.spec import ActionSpec
from jitagent.runtime import parsing
from jitagent.runtime.conversation import Attempt, Conversation
from jitagent.runtime.stage import RunContext, Stage
from jitagent.sandbox.tools import ToolResult
from jitagent.tasks.verifiers import code_of


class Action(Stage):
    """The base: a reply makes no tool call and is the answer once it says `Final answer:`."""

    kinds: ClassVar[dict[str, type[Action]]] = {}
    section = "action"
    spec: ActionSpec
    stop_at: ClassVar[list[str] | None] = None  # where a reply ends (before an observation it would invent)
    prefill_every_step: ClassVar[bool] = False  # else the spec's prefill opens the first reply only

    def prefill(self, prefill: str, step: int) -> str:
        return prefill if step == 0 or self.prefill_every_step else ""

    def stop(self, prefill: str, opened: bool = True) -> list[str] | None:
        """Where a reply ends: a harness that opens it with a code block, at the block's end — the next
        fence where it was prefilled, else (the reply may be a call instead) a fence on a line of its own."""
        if prefill.startswith("```"):
            return ["```"] if opened else ["\n```\n"]
        return self.stop_at

    def schema(self, tools: list[str]) -> dict | None:
        """A JSON schema the reply is decoded under."""
        return None

    def temperature(self, tool_failed: bool) -> float:
        spec = self.spec
        chosen = spec.temperature if spec.samples == 1 or spec.temperature > 0 else 0.7  # samples must differ
        return max(chosen, 0.6) if tool_failed else chosen  # after a failed call, greedy decoding repeats it

    def call(self, reply: str) -> parsing.ToolCall | None:
        return None

    def answers(self, reply: str) -> bool:
        """Whether a reply without a tool call is the answer (else the agent is told to go on)."""
        return parsing.has_final(reply)

    async def answer(self, run: RunContext, reply: str) -> str:
        if run.task.verifier.kind == "python_tests":
            # the code is the answer: the reply's own code, else the last program the agent wrote
            if "def " in code_of(reply):
                return code_of(reply)
            written = [m["content"] for m in run.trajectory.messages
                       if m["role"] == "assistant" and "def " in code_of(m["content"])]
            if written:
                return code_of(written[-1])
        return reply.strip() if self.spec.answer_from == "reply" else parsing.extract_answer(reply)

    def stdout_answer(self, call: parsing.ToolCall, result: ToolResult) -> str | None:
        """`answer_from: stdout`: the last line a program printed is the answer."""
        printed = result.stdout.strip()
        if self.spec.answer_from == "stdout" and call.tool == "python" and result.ok and printed:
            return printed.splitlines()[-1].strip()
        return None

    async def out_of_steps(self, run: RunContext, talk: Conversation) -> Attempt:
        """The answer once the steps ran out: what the last program printed, or what the last reply says."""
        printed = talk.stdout.strip()
        if self.spec.answer_from == "stdout" and (printed or run.task.verifier.kind != "python_tests"):
            answer = printed.splitlines()[-1] if printed else None
        else:
            answer = await self.answer(run, talk.reply)
        return Attempt(answer or None, failure=None if answer else "no answer within max_steps")


class Direct(Action, kind="direct"):
    """The first reply is the answer."""

    def answers(self, reply: str) -> bool:
        return True


class ReAct(Action, kind="react"):
    """`Thought:`, `Action:` and `Action Input:` lines; the runtime writes the `Observation:`."""

    stop_at = ["Observation:"]

    def call(self, reply: str) -> parsing.ToolCall | None:
        return parsing.parse_react(reply)


class CodeAct(Action, kind="codeact"):
    """A Python code block is a call to the `python` tool."""

    stop_at = ["Observation:"]
    prefill_every_step = True

    def call(self, reply: str) -> parsing.ToolCall | None:
        blocks = parsing.code_blocks(reply)
        return parsing.ToolCall("python", {"code": blocks[0]}) if blocks else None


class JsonTool(Action, kind="json_tool"):
    """A JSON object `{thought, tool, args}` decoded under a schema with one branch per tool; a reply that
    makes no call is the answer."""

    def schema(self, tools: list[str]) -> dict | None:
        return parsing.json_tool_schema(tools)

    def call(self, reply: str) -> parsing.ToolCall | None:
        return parsing.parse_json_tool(reply)

    def answers(self, reply: str) -> bool:
        return True
