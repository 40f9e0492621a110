"""The state of one harness run, shared by its stages and sub-agents, and the calls they make through it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from jitagent.models.base import Cancelled, CancelToken, Generation, ModelClient
from jitagent.runtime.channel import EventChannel
from jitagent.runtime.events import Cost, Step, Stop, Trajectory
from jitagent.runtime.parsing import ToolCall
from jitagent.runtime.stage_code import StageCodeError, call_stage
from jitagent.spec import HarnessSpec
from jitagent.tasks import Task
from jitagent.tools import ToolBox, ToolResult

if TYPE_CHECKING:
    from jitagent.runtime.actions import Action
    from jitagent.runtime.memory import Memory
    from jitagent.runtime.planning import Planning
    from jitagent.runtime.prompts import ControlPrompts
    from jitagent.runtime.verify import Verify
    from jitagent.runtime.voting import Vote

PER_CALL_TOKENS = 384


class BudgetExceeded(Exception):
    cause = "budget"


class StageFailure(Exception):
    """A harness code section failed at run time."""

    cause = "stage_failure"


@dataclass
class Attempt:
    answer: str | None
    failure: str | None = None  # what went wrong, for a reflection


@dataclass
class Conversation:
    """One action loop: its messages, and what its stages keep from step to step."""

    prompt: str
    depth: int
    seed: int
    lesson: str = ""  # the reflection on a failed earlier attempt
    plan: str = ""
    history: list[dict] = field(default_factory=list)  # the task message first
    notes: list[str] = field(default_factory=list)  # the model's `NOTE:` lines
    summary: str = ""
    observation: str = ""  # the last tool call's output
    stdout: str = ""  # the last program's
    reply: str = ""  # the model's last
    tool_failed: bool = False
    step: int = 0

    def hear(self, reply: str) -> None:
        self.reply = reply
        self.history.append({"role": "assistant", "content": reply})
        self.notes += [line.split(":", 1)[1].strip() for line in reply.splitlines()
                       if line.upper().startswith("NOTE:")]

    def tell(self, text: str) -> None:
        self.history.append({"role": "user", "content": text})


@dataclass
class Run:
    """One harness run: what it runs with, its stages, and what it spent, did and came to."""

    spec: HarnessSpec
    task: Task
    toolbox: ToolBox
    cancel: CancelToken
    seed: int
    solver: ModelClient
    memory: Memory
    planning: Planning
    action: Action
    verify: Verify
    vote: Vote
    prompts: ControlPrompts
    events: EventChannel = field(default_factory=EventChannel)
    cost: Cost = field(default_factory=Cost)
    trajectory: Trajectory = field(default_factory=Trajectory)
    tool_calls: int = 0
    answer: str | None = None
    stop: Stop | None = None
    error: str | None = None  # an infrastructure failure
    interrupted: bool = False

    async def emit(self, event: Step) -> None:
        self.trajectory.events.append(event)
        await self.events.emit(event)

    def has_code(self, stage: str) -> bool:
        return self.spec.code is not None and self.spec.code.stage == stage

    async def run_code(self, args: dict):
        """The spec's `code` section on `args`, in the sandbox."""
        try:
            return await call_stage(self.spec.code, args, self.toolbox.workspace,
                                    deadline=self.cancel.deadline)
        except StageCodeError as exc:
            raise StageFailure(str(exc)) from None

    async def ask(self, prompt: str, max_tokens: int, user: str = "user", **fields: object) -> str:
        """The answer to a control prompt: greedy, with the run's seed."""
        messages = self.prompts.messages(prompt, user, **fields)
        return (await self.complete(messages, max_tokens=max_tokens, temperature=0.0, seed=self.seed)).text

    async def complete(self, messages: list[dict], *, temperature: float, seed: int,
                       stop: list[str] | None = None, json_schema: dict | None = None,
                       max_tokens: int = PER_CALL_TOKENS) -> Generation:
        budget = self.spec.limits.max_tokens
        left = budget - (self.cost.completion_tokens or 0)
        if left <= 0:
            raise BudgetExceeded(f"token budget exhausted (limits.max_tokens = {budget})")
        if self.cancel.is_cancelled():
            raise Cancelled("deadline exceeded or cancelled")
        generation = await self.solver.complete(messages, max_tokens=min(max_tokens, left),
                                                temperature=temperature, seed=seed, stop=stop,
                                                json_schema=json_schema, cancel=self.cancel)
        self.cost.add(generation.usage)
        return generation

    async def call_tool(self, call: ToolCall) -> ToolResult:
        limit = self.spec.limits.max_tool_calls
        if self.tool_calls >= limit:
            return ToolResult(f"error: tool-call limit ({limit}) reached; give the final answer", ok=False)
        self.tool_calls += 1
        result = await self.toolbox.call(call.tool, call.args, deadline=self.cancel.deadline)
        for _ in range(self.spec.tools.retry):  # only a run the sandbox killed is worth repeating
            if result.ok or "killed" not in result.output:
                break
            result = await self.toolbox.call(call.tool, call.args, deadline=self.cancel.deadline)
        self.trajectory.messages.append({"role": "tool", "name": call.tool, "content": result.output})
        return result
