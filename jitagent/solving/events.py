"""What one solve streams, in order, as one typed union from the runtime to the wire: `Routed` (after a
synthesis: `Retrieved`, each `CandidateChecked`, then `Routed`), `Chosen`, the run's `Step`s and the
task's `Verdict`, the `BankDecision` where the outcome was admitted, and last the `SolveResult`.
jitagent.protocol.results turns each into its protobuf message. All are keyword-only.

Which layer owns which record of a run, and how one becomes the next. A layer imports only those below
it, so each keeps records of its own rather than one type shared from the runtime to the wire.
- runtime (jitagent.runtime.events): `RunResult`, what one harness run came to (answer, verdict, reward,
  `Cost`, `Trajectory`, `Stop`), streamed after its `Step`s.
- pipeline (here): `SolveResult`, one solve (route, harness, cluster, synthesis), holding the `RunResult`
  (None where the harness was not executed).
- bank (harness_bank, which knows nothing of the runtime): the pipeline writes a `RunRecord` of every run
  it records (`pipeline._record`: answer, trace, tokens, found again when feedback names the run id) and
  turns a verified `RunResult` into an `Outcome`, the evidence the bank admits (`pipeline.outcome_of`;
  `RunRecord.outcome` for feedback reported later). The bank sums outcomes per harness into the router's
  `ArmEvidence`, an aggregate and no longer one run.
- doors: `SolveResult.solved` makes one flat record of a `SolveResult`, which every door gives in its wire
  form (gRPC's `pb.SolveResult`, the SDK's, HTTP's, MCP's and a worker's result are that record).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from harness_bank.router import ArmSummary, Route
from jitagent.common.usage import Usage
from jitagent.harness.spec import HarnessSpec
from jitagent.improvement.synthesis.synthesize import (
    SYNTHESIS_PHASES,
    CandidateChecked,
    Synthesis,
    SynthesisCost,
)
from jitagent.runtime.events import Cost, RunResult, Step
from jitagent.solving.result import Solved, Spent
from jitagent.tasks.verifiers import Verdict


@dataclass(frozen=True, kw_only=True)
class Routed:
    route: Route
    cluster: str
    text: str  # why this harness
    arms: tuple[ArmSummary, ...]


@dataclass(frozen=True, kw_only=True)
class Retrieved:
    """Synthesis starts: `text` names the parents it mutates or chooses among."""

    text: str
    arms: tuple[ArmSummary, ...]


@dataclass(frozen=True, kw_only=True)
class Chosen:
    harness: HarnessSpec
    examples: tuple[str, ...] = ()  # the runs whose solutions it is shown (run ids; `outcome:N` without one)
    evidence: tuple[str, ...] = ()  # what admitted each (verifier:KIND, report:TENANT; "": not said)


@dataclass(frozen=True, kw_only=True)
class BankDecision:
    cluster: str
    promoted: bool
    reason: str

    @property
    def text(self) -> str:
        """Not "kept incumbent": a cluster's first runs have none to keep."""
        return ("promoted: " if self.promoted else "not promoted: ") + self.reason


@dataclass(kw_only=True)
class SolveResult:
    task_id: str
    route: Route
    harness: HarnessSpec
    cluster: str
    synthesis: Synthesis | None
    run: RunResult | None
    references: list[ArmSummary]
    synthesis_cost: SynthesisCost
    wall_s: float
    bank_decision: str = ""  # BankDecision.text, or "" when the outcome was not admitted
    run_id: str = ""
    examples: tuple[str, ...] = ()  # the runs whose solutions the harness was shown (see Chosen)

    def phase_costs(self) -> dict[str, Cost]:
        """What each phase of the solve cost: synthesis, repair, dry runs, selection, and the run's
        execution where it ran."""
        costs = {phase: getattr(self.synthesis_cost, phase) for phase in SYNTHESIS_PHASES}
        return costs | ({"execution": self.run.cost} if self.run else {})

    @property
    def total_cost(self) -> Cost:
        """Every token of the solve: synthesis, repair, dry runs, selection and the run (unknown where a
        part is unknown); the wall time is the whole solve's."""
        usage = sum((part.usage for part in self.phase_costs().values()), Usage())
        return Cost(prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens,
                    wall_s=self.wall_s)

    def solved(self) -> Solved:
        """The flat record every door gives (a live run's, or one read back from the bank): its fields of
        the same name copied, the run's read off it."""
        run = self.run
        same = {name: getattr(self, name) for name in Solved.model_fields if hasattr(self, name)}
        return Solved(**same | {
            "harness_id": self.harness.id, "harness_name": self.harness.name,
            "answer": run.answer if run else None, "passed": run.passed if run else None,
            "reward": run.reward if run else None, "verdict": run.verdict if run else "",
            "error": run.error if run else None, "interrupted": run.interrupted if run else False,
            "cost": Spent.of(run.cost if run else Cost()), "total_cost": Spent.of(self.total_cost),
            "tool_calls": tuple(json.dumps(call) for call in run.client_calls) if run else ()})

    def to_dict(self) -> dict:
        """The flat record (`Solved`) and what a synthesis did: the references it read, its candidates, its
        reason and cost by phase."""
        synthesis = self.synthesis
        return self.solved().model_dump(mode="json") | {
            "references": [asdict(a) for a in self.references],
            "reason": synthesis.reason if synthesis else "",
            "candidates": [c.to_dict() for c in synthesis.candidates] if synthesis else [],
            "synthesis_cost": self.synthesis_cost.to_dict()}


SolveEvent = Routed | Retrieved | CandidateChecked | Chosen | Step | Verdict | BankDecision | SolveResult
