"""Tool-making where the bank meets the models: when a cluster is due for code (its best arm plateaus), its
labelled tasks with that arm's recorded outcomes on them, the Toolsmith (jitagent.improvement.toolmaking),
and what an attempt leaves in the bank — always its record, and for an accepted harness the harness itself
and its trial outcomes, the evidence the router weighs like any other arm's.

Used online by the pipeline (the router's synthesis draw in a plateaued cluster asks for code instead of a
prompt edit, written between tasks) and ahead of time by evolve (on `learn`, `score` as the no-regression
gate). Once accepted, code costs no synthesis tokens: the harness carrying it runs like any other."""

from __future__ import annotations

import asyncio

from pydantic import BaseModel, Field

from harness_bank import HarnessBank, Outcome
from harness_bank.router import Arm
from jitagent.harness.spec import HarnessSpec
from jitagent.improvement.toolmaking import Labelled, Toolmaking, ToolmakingConfig, Toolsmith, Writer
from jitagent.models.base import ModelClient
from jitagent.tasks.task import Task
from jitagent.tasks.verifiers import reference_answer


class PlateauConfig(BaseModel):
    """When a cluster is due for code: its best arm has run, leaves room, and enough labelled tasks carry its
    outcome to show some to a writer and judge on the rest; then again only after more evidence."""

    min_labelled: int = Field(8, ge=2, le=1000, description="labelled tasks with the best arm's outcome")
    ceiling: float = Field(0.9, ge=0, le=1, description="a best arm at this posterior mean leaves no room")
    retry_after: int = Field(10, ge=1, description="outcomes in the cluster between two attempts")
    max_attempts: int = Field(3, ge=1, le=100, description="attempts per cluster")


class Toolshop:
    def __init__(self, bank: HarnessBank, writer: ModelClient, config: ToolmakingConfig | None = None,
                 plateau: PlateauConfig | None = None):
        self.bank = bank
        self.config = config or ToolmakingConfig()
        self.plateau = plateau or PlateauConfig()
        self.smith = Toolsmith(Writer(writer, temperature=self.config.temperature,
                                      max_tokens=self.config.max_tokens), self.config)

    @property
    def writer(self) -> str:
        return self.smith.writer.model.name

    def due(self, cluster: str, arms: list[Arm]) -> tuple[Arm, str] | None:
        """The arm to write code on and why, when the cluster is due for code now: its best arm among those
        that ran there plateaus. Bank reads: a thread's."""
        cfg = self.plateau
        best = max((a for a in arms if a.evidence.runs), key=lambda a: (a.mean, a.evidence.harness_id),
                   default=None)
        if best is None or best.mean >= cfg.ceiling:
            return None
        rounds = [a for a in self.bank.code_attempts(cluster) if a["stage"] == self.config.stages[0]]
        seen = self.bank.outcome_count(cluster)
        if len(rounds) >= cfg.max_attempts or rounds and seen < rounds[-1]["outcomes_seen"] + cfg.retry_after:
            return None
        ids = [t["id"] for t in self.bank.labelled_tasks(cluster)]
        covered = len(self.bank.latest_outcomes(best.evidence.harness_id, cluster, ids))
        if covered < cfg.min_labelled:
            return None
        return best, (f"plateau: {best.evidence.name} at {best.mean:.2f} after {best.evidence.runs} run(s), "
                      f"{covered} labelled tasks")

    def labelled(self, cluster: str, parent: HarnessSpec) -> list[Labelled]:
        """The cluster's labelled tasks that carry the parent's recorded outcome (a trial reuses it where
        code gives no answer). Bank reads: a thread's."""
        tasks = [Task.model_validate(t) for t in self.bank.labelled_tasks(cluster)]
        outcomes = self.bank.latest_outcomes(parent.id, cluster, [t.id for t in tasks])
        return [Labelled(task=t, reference=reference_answer(t), **outcomes[t.id]) for t in tasks
                if t.id in outcomes]

    async def make(self, cluster: str, parent: HarnessSpec, labelled: list[Labelled],
                   seed: int = 0) -> list[Toolmaking]:
        return await self.smith.make(cluster, parent, labelled, seed=seed)

    def keep(self, made: Toolmaking, labelled: list[Labelled], *, adopt: bool) -> None:
        """Record the attempt; with `adopt`, store its accepted harness and its trial outcomes as evidence
        in the cluster. Bank writes: a thread's."""
        harness_id = None
        if adopt and made.accepted is not None:
            harness_id = self.bank.add_harness(made.accepted.model_dump(mode="json"))
            by_id = {item.task.id: item for item in labelled}
            share = made.trial_s / max(1, len(made.heldout))
            for task_id, scored in zip(made.heldout, made.evidence):
                self.bank.record_outcome(trial_outcome(made, by_id[task_id], scored, share))
        self.bank.record_code_attempt(
            cluster=made.cluster, stage=made.stage, parent_id=made.parent.id, harness_id=harness_id,
            accepted=harness_id is not None, reason=made.reason, detail=made.summary() | {
                "sources": [c.draft.source for c in made.candidates if c.draft.source is not None]},
            prompt_tokens=made.cost.prompt_tokens, completion_tokens=made.cost.completion_tokens,
            wall_s=made.cost.wall_s + made.trial_s)

    async def run(self, cluster: str, parent: HarnessSpec, seed: int = 0) -> list[Toolmaking]:
        """Online: write code for the cluster from what the bank holds, adopt what is accepted."""
        labelled = await asyncio.to_thread(self.labelled, cluster, parent)
        made = await self.make(cluster, parent, labelled, seed)
        for attempt in made:
            await asyncio.to_thread(self.keep, attempt, labelled, adopt=True)
        return made


def trial_outcome(made: Toolmaking, item: Labelled, scored, wall_s: float) -> Outcome:
    """A held-out trial as the accepted harness's outcome on that task: code's answer where it gave one
    (no model tokens), else the parent's recorded run, which is what the harness's own loop would do."""
    by_code = scored.by_code
    return Outcome(
        harness_id=made.accepted.id, task_id=item.task.id, task_text=item.task.prompt, reward=scored.reward,
        prompt_tokens=0 if by_code else item.prompt_tokens, completion_tokens=0 if by_code
        else item.completion_tokens, wall_s=wall_s if by_code else item.wall_s, cluster=made.cluster,
        task_type=item.task.type, tags=tuple(item.task.tags), answer=scored.answer,
        verdict=("trial: code answered" if by_code else "trial: the harness's loop (the parent's run)"))

