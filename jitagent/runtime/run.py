"""The state of one harness run, shared by its stages and sub-agents, and the calls they make through it
(the stages see it as `stage.RunContext`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from jitagent.harness.spec import HarnessSpec
from jitagent.models.base import Cancelled, CancelToken, Generation, ModelClient
from jitagent.runtime.actions import Action
from jitagent.runtime.channel import EventChannel
from jitagent.runtime.events import Cost, Step, Stop, Trajectory
from jitagent.runtime.memory import Memory
from jitagent.runtime.parsing import ToolCall
from jitagent.runtime.planning import Planning
from jitagent.runtime.prompts import ControlPrompts
from jitagent.runtime.stage_code import StageCodeError, call_stage
from jitagent.runtime.verify import Verify
from jitagent.runtime.voting import Vote
from jitagent.sandbox.tools import ToolBox, ToolResult
from jitagent.tasks.task import Task

PER_CALL_TOKENS = 384


class BudgetExceeded(Exception):
    cause = "budget"


class StageFailure(Exception):
    """A harness code section failed at run time."""

    cause = "stage_failure"


@dataclass(kw_only=True)
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
    examples: tuple[dict, ...] = ()  # solved tasks' messages, shown in place of the spec's few_shot
    events: EventChannel = field(default_factory=EventChannel)
    cost: Cost = field(default_factory=Cost)
    trajectory: Trajectory = field(default_factory=Trajectory)
    tool_calls: int = 0
    answer: str | None = None
    client_calls: list[ToolCall] = field(default_factory=list)  # where the run paused for the client
    stop: Stop | None = None
    error: str | None = None  # an infrastructure failure
    interrupted: bool = False

    @property
    def calls_sent(self) -> list[dict]:
        """The calls of the client's functions the run paused at, as the client gets them."""
        return [{"name": call.tool, "arguments": call.args} for call in self.client_calls]

    async def emit(self, event: Step) -> None:
        self.trajectory.events.append(event)
        await self.events.emit(event)

    def has_code(self, stage: str) -> bool:
        return self.spec.code_for(stage) is not None

    async def run_code(self, stage: str, args: dict):
        """The spec's `code` section for `stage` on `args`, in the sandbox."""
        try:
            return await call_stage(self.spec.code_for(stage), args, self.toolbox.workspace,
                                    deadline=self.cancel.deadline)
        except StageCodeError as exc:
            raise StageFailure(str(exc)) from None

    async def ask(self, prompt: str, max_tokens: int, user: str = "user", **fields: object) -> str:
        """The answer to a control prompt: greedy, with the run's seed."""
        messages = self.prompts.messages(prompt, user, **fields)
        return (await self.complete(messages, max_tokens=max_tokens, temperature=0.0, seed=self.seed)).text

    async def complete(self, messages: list[dict], *, temperature: float, seed: int,
                       stop: list[str] | None = None, json_schema: dict | None = None,
                       max_tokens: int = PER_CALL_TOKENS, tools: list[dict] | None = None) -> Generation:
        budget = self.spec.limits.max_tokens
        left = budget - (self.cost.completion_tokens or 0)
        if left <= 0:
            raise BudgetExceeded(f"token budget exhausted (limits.max_tokens = {budget})")
        if self.cancel.is_cancelled():
            raise Cancelled("deadline exceeded or cancelled")
        try:
            generation = await self.solver.complete(messages, max_tokens=min(max_tokens, left),
                                                    temperature=temperature, seed=seed, stop=stop,
                                                    json_schema=json_schema, cancel=self.cancel,
                                                    **({"tools": tools} if tools else {}))
        except Cancelled as exc:  # a call cut short was paid for all the same
            self.cost.add(exc.usage)
            raise
        self.cost.add(generation.usage)
        return generation

    async def call_tool(self, call: ToolCall) -> ToolResult:
        limit = self.spec.limits.max_tool_calls
        if self.tool_calls >= limit:
            return ToolResult(f"error: tool-call limit ({limit}) reached; give the final answer", ok=False)
        self.tool_calls += 1
        result = await self.toolbox.call(call.tool, call.args, deadline=self.cancel.deadline)
        for _ in range(self.spec.tools.retry):  # only a run the sandbox killed is worth repeating
            if not result.killed:
                break
            result = await self.toolbox.call(call.tool, call.args, deadline=self.cancel.deadline)
        self.trajectory.messages.append({"role": "tool", "name": call.tool, "content": result.output})
        return result
