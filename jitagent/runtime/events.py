"""What the agent loop records and yields as it works: its steps, then its result.

The runtime owns these records: a `Step` as each thing happens, then one `RunResult` with the run's
`Cost`, `Trajectory` and what stopped it (`Stop`). The layers above build their own from a `RunResult`
and never the reverse (jitagent.solving.events tells how): the pipeline's `SolveResult` holds it, the bank's
`Outcome` and `RunRecord` are made of its facts. All are keyword-only: neighbouring fields share a type
(`prompt_tokens`, `completion_tokens`), so a positional swap would pass silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from jitagent.common.usage import Usage
from jitagent.runtime.clipping import OBSERVATION_CHARS, head_and_tail

StepKind = Literal["plan", "model", "tool", "memory", "reflection", "subtask", "sample", "vote", "verify"]


@dataclass(kw_only=True)
class Step:
    """One thing a run did; `kind` says which (the task's verdict is not a step: verifiers.Verdict)."""

    kind: StepKind
    text: str = ""
    step: int = 0
    depth: int = 0
    tool: str | None = None
    ok: bool = True
    usage: Usage = field(default_factory=Usage)
    wall_s: float = 0.0


@dataclass(kw_only=True)
class Cost:
    """Tokens and wall time; None tokens mean unknown."""

    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    wall_s: float = 0.0

    @property
    def usage(self) -> Usage:
        return Usage(self.prompt_tokens, self.completion_tokens)

    def add(self, usage: Usage) -> None:
        total = self.usage + usage
        self.prompt_tokens, self.completion_tokens = total.prompt_tokens, total.completion_tokens

    def add_cost(self, other: Cost) -> None:
        self.add(other.usage)
        self.wall_s += other.wall_s

    @property
    def tokens(self) -> int | None:
        return self.usage.total


@dataclass(kw_only=True)
class Trajectory:
    messages: list[dict] = field(default_factory=list)
    events: list[Step] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class Stop:
    """The harness's own limit or code ended the run: a genuine outcome, not an infrastructure failure."""

    cause: Literal["timeout", "budget", "stage_failure"]
    text: str  # as the run's `verify` step says it


@dataclass(kw_only=True)
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
    # the turns of the conversation that gave the answer (replies and the observations between them), what a
    # later task of the cluster may be shown once this run is verified; None: no single conversation gave it
    solution: list[dict] | None = None
    # the calls of the client's functions the run paused at ({"name", "arguments"}); []: it did not pause
    client_calls: list[dict] = field(default_factory=list)

    def summary(self) -> dict:
        return {"task_id": self.task_id, "harness_id": self.harness_id, "answer": self.answer,
                "passed": self.passed, "reward": self.reward, "verdict": self.verdict,
                "prompt_tokens": self.cost.prompt_tokens, "completion_tokens": self.cost.completion_tokens,
                "tokens": self.cost.tokens, "wall_s": round(self.cost.wall_s, 3), "error": self.error,
                "interrupted": self.interrupted}


CODE_STAGE_TOOLS = ("solve", "answer")  # the steps a `code` section takes, not a model's turns


def solution_turns(events: list[Step]) -> list[dict] | None:
    """The last conversation at depth 0 (the one that gave the answer): each reply, and each observation
    that a later reply saw; None where no model turn gave the answer (code did)."""
    turns = [e for e in events if e.depth == 0 and e.kind in ("model", "tool")]
    starts = [i for i, e in enumerate(turns) if e.kind == "model" and e.step == 0]
    if not starts or any(e.tool in CODE_STAGE_TOOLS for e in turns[starts[-1]:]):
        return None
    last = turns[starts[-1]:]
    replies = [i for i, e in enumerate(last) if e.kind == "model"]
    return [{"role": "assistant", "content": e.text} if e.kind == "model"
            else {"role": "user", "content": "Observation:\n" + head_and_tail(e.text, OBSERVATION_CHARS)}
            for i, e in enumerate(last) if e.kind == "model" or i < replies[-1]]
