"""Typed records the agent loop yields as it works (the shape of the gRPC Solve stream)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from jitagent.models.base import Usage, add_known

EventKind = Literal["plan", "model", "tool", "memory", "reflection", "subtask", "sample", "vote", "verify",
                    "verdict", "result"]


@dataclass
class AgentEvent:
    kind: EventKind
    text: str = ""
    step: int = 0
    depth: int = 0
    tool: str | None = None
    ok: bool | None = True  # None on a verdict that was not verified
    usage: Usage = field(default_factory=Usage)
    wall_s: float = 0.0
    result: RunResult | None = field(default=None, repr=False)  # set on the final `result` event


@dataclass
class Cost:
    """Tokens and wall time; None tokens mean unknown."""

    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    wall_s: float = 0.0

    def add(self, usage: Usage) -> None:
        total = Usage(self.prompt_tokens, self.completion_tokens) + usage
        self.prompt_tokens, self.completion_tokens = total.prompt_tokens, total.completion_tokens

    def add_cost(self, other: Cost) -> None:
        self.add(Usage(other.prompt_tokens, other.completion_tokens))
        self.wall_s += other.wall_s

    @property
    def tokens(self) -> int | None:
        return add_known(self.prompt_tokens, self.completion_tokens)


@dataclass
class Trajectory:
    messages: list[dict] = field(default_factory=list)
    events: list[AgentEvent] = field(default_factory=list)


@dataclass(frozen=True)
class Stop:
    """The harness's own limit or code ended the run: a genuine outcome, not an infrastructure failure."""

    cause: Literal["timeout", "budget", "stage_failure"]
    text: str  # as the run's `verify` event says it


@dataclass
class RunResult:
    task_id: str
    harness_id: str
    answer: str | None
    passed: bool | None  # None (with reward None): not verified, which is not a failure
    reward: float | None
    verdict: str
    cost: Cost
    trajectory: Trajectory
    error: str | None = None  # an infrastructure failure (not a genuine wrong answer)
    interrupted: bool = False  # stopped from outside (a caller's deadline or cancel), not by the harness
    stop: Stop | None = None  # stopped by the harness's own limits or code

    def summary(self) -> dict:
        return {"task_id": self.task_id, "harness_id": self.harness_id, "answer": self.answer,
                "passed": self.passed, "reward": self.reward, "verdict": self.verdict,
                "prompt_tokens": self.cost.prompt_tokens, "completion_tokens": self.cost.completion_tokens,
                "tokens": self.cost.tokens, "wall_s": round(self.cost.wall_s, 3), "error": self.error,
                "interrupted": self.interrupted}
