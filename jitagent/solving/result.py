"""One solved task as every door gives it: one flat record, made in one place (`SolveResult.solved`).

The gRPC result (`pb.SolveResult`), the SDK's result, the HTTP door's `jitagent` object, MCP's `solve`
result and a worker's result entry are this record in their wire form, converted by field name
(`jitagent.protocol.records`). A value the pipeline computes reaches every door with three edits: the
pipeline's line that computes it, its field of `SolveResult` and its field here of the same name (copied
by name) — and the proto's field, from which the stubs are generated. Kept free of the server's imports:
the SDK reads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from jitagent.runtime.events import Cost


class Spent(BaseModel):
    """Tokens and wall time; a token count of None is unknown, never 0."""

    model_config = ConfigDict(frozen=True)
    prompt_tokens: int | None
    completion_tokens: int | None
    wall_s: float

    @property
    def tokens(self) -> int | None:
        known = self.prompt_tokens is not None and self.completion_tokens is not None
        return self.prompt_tokens + self.completion_tokens if known else None

    @classmethod
    def of(cls, cost: Cost) -> Spent:
        return cls(prompt_tokens=cost.prompt_tokens, completion_tokens=cost.completion_tokens,
                   wall_s=cost.wall_s)


class Solved(BaseModel):
    """One solved task. `passed` and `reward` are None when nothing verified the answer: unknown, not a
    failure — a report (`report`, `ReportOutcome`, the feedback route) can say how it went."""

    model_config = ConfigDict(frozen=True)
    run_id: str = Field(description="the run's id: report on it, or solve again with it for this result")
    task_id: str
    route: str = Field(description="exploit | explore | variant | synthesized | fallback")
    harness_id: str
    harness_name: str
    cluster: str
    answer: str | None = Field(description="None: the harness gave no answer")
    passed: bool | None
    reward: float | None = Field(description="None: nothing verified it")
    verdict: str
    error: str | None = Field(description="an infrastructure failure, not the harness's doing")
    interrupted: bool = Field(description="stopped from outside: the caller's deadline or cancel")
    cost: Spent = Field(description="the run's tokens and wall time")
    total_cost: Spent = Field(description="every token of the solve: synthesis, repair, dry runs, "
                                          "selection and the run")
    wall_s: float = Field(description="the whole solve")
    bank_decision: str = Field(description="the admission's decision on a verified run; empty: none")
    examples: tuple[str, ...] = Field(description="the runs whose verified solutions the harness was shown")
    tool_calls: tuple[str, ...] = Field((), description="the calls of the client's functions the run paused "
                                                         "at, each {name, arguments} as JSON; none: no pause")

    @property
    def verified(self) -> bool:
        return self.reward is not None


class Reported(BaseModel):
    """How a reported outcome was taken, as every door gives it (`Recorded.reported`): the cluster and
    harness it counted for and the bank's admission — no harness becomes incumbent on one report."""

    model_config = ConfigDict(frozen=True)
    cluster: str
    harness_id: str
    promoted: bool
    reason: str
    incumbent_id: str | None = Field(description="None: the cluster has no incumbent yet")
