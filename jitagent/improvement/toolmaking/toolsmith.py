"""Tool-making for a cluster: a writer model writes a stage function from the cluster's labelled tasks, and
a harness carrying it is accepted only if it earns more than the cluster's best harness on labelled tasks
the writer did not see (LATM, CRAFT: verification is what makes a weak writer usable).

For each stage (`solve`, then `answer`): split the labelled tasks into a few shown to the writer and the
rest held out; write several drafts in one call; try each on the shown tasks and repair the best few from
what they got wrong; try every draft on the held-out tasks; accept the best if its mean reward there beats
the parent's by `min_gain` and it wins `min_net_wins` more tasks than it loses. A function that returns a
constant or an answer it memorized from the shown tasks earns nothing on the held-out ones. An accepted
`solve` stage is the parent for the `answer` stage that follows."""

from __future__ import annotations

import hashlib
import json
import statistics
import time
import zlib
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from jitagent.harness.spec import HarnessSpec, parse_spec
from jitagent.improvement.synthesis.edit import VARIANT, root_name
from jitagent.improvement.toolmaking.trials import Labelled, Scored, trial
from jitagent.improvement.toolmaking.writer import (
    Draft,
    Example,
    Stage,
    Writer,
    copied,
    copied_text,
    failure_text,
)
from jitagent.models.base import CancelToken
from jitagent.runtime.events import Cost


class ToolmakingConfig(BaseModel):
    stages: tuple[Stage, ...] = Field(("solve", "answer"), description="stages written, in this order")
    candidates: int = Field(4, ge=1, le=16, description="drafts per stage, sampled in one call")
    shown: int = Field(3, ge=1, le=8, description="labelled tasks the writer sees; the rest are held out")
    min_heldout: int = Field(3, ge=1, le=64, description="held-out tasks needed to judge at all")
    repairs: int = Field(4, ge=0, le=16, description="drafts repaired from what they got wrong when shown")
    temperature: float = Field(0.8, gt=0, le=2)
    max_tokens: int = Field(600, ge=64, le=4096)
    min_gain: float = Field(0.1, ge=0, le=1, description="held-out mean reward over the parent's to accept")
    min_net_wins: int = Field(2, ge=1, le=64, description="held-out tasks won minus lost against the parent: "
                                                         "a constant answer can get lucky once")
    verify_heldout: bool = Field(True, description="False, an ablation only: accept the first draft that "
                                                   "runs on the shown tasks, unverified")


@dataclass(kw_only=True)
class Candidate:
    draft: Draft
    shown: list[Scored] = field(default_factory=list)
    heldout: list[Scored] = field(default_factory=list)

    @property
    def runs(self) -> bool:
        """It ran on the first shown task without failing."""
        return bool(self.shown) and self.shown[0].error is None

    @property
    def shown_mean(self) -> float:
        return statistics.fmean(s.reward for s in self.shown) if self.shown else 0.0

    @property
    def heldout_mean(self) -> float:
        return statistics.fmean(s.reward for s in self.heldout) if self.heldout else 0.0


@dataclass(kw_only=True)
class Toolmaking:
    """One stage written for one cluster: every draft, how each did, what was accepted and why."""

    cluster: str
    stage: Stage
    parent: HarnessSpec
    writer: str
    shown: list[str]  # task ids the writer saw
    heldout: list[str]  # task ids it was judged on
    parent_rewards: list[float]  # the parent on the held-out tasks
    candidates: list[Candidate] = field(default_factory=list)
    accepted: HarnessSpec | None = None
    evidence: list[Scored] = field(default_factory=list)  # the accepted harness on the held-out tasks
    reason: str = ""
    cost: Cost = field(default_factory=Cost)  # the writer's tokens and wall time
    trial_s: float = 0.0  # sandbox time of the trials

    @property
    def parent_mean(self) -> float | None:
        return statistics.fmean(self.parent_rewards) if self.parent_rewards else None

    def summary(self) -> dict:
        return {"cluster": self.cluster, "stage": self.stage, "parent": self.parent.name,
                "writer": self.writer, "accepted": self.accepted.name if self.accepted else None,
                "reason": self.reason, "shown": self.shown, "heldout": self.heldout,
                "parent_rewards": self.parent_rewards, "evidence": [s.reward for s in self.evidence],
                "drafts": len(self.candidates), "runnable": sum(c.runs for c in self.candidates),
                "heldout_means": [round(c.heldout_mean, 3) for c in self.candidates if c.draft.source],
                "prompt_tokens": self.cost.prompt_tokens, "completion_tokens": self.cost.completion_tokens,
                "writer_s": round(self.cost.wall_s, 2), "trial_s": round(self.trial_s, 2)}


def correct_answer(item: Labelled) -> str | None:
    return item.reference or (item.answer if item.reward >= 1.0 else None)


class Toolsmith:
    def __init__(self, writer: Writer, config: ToolmakingConfig | None = None):
        self.writer = writer
        self.config = config or ToolmakingConfig()

    async def make(self, cluster: str, parent: HarnessSpec, labelled: list[Labelled], *, seed: int = 0,
                   cancel: CancelToken | None = None) -> list[Toolmaking]:
        """Each configured stage in turn; an accepted one is the next stage's parent."""
        made = []
        for number, stage in enumerate(self.config.stages):
            attempt = await self.stage(cluster, stage, parent, labelled, seed + 101 * number, cancel)
            made.append(attempt)
            parent = attempt.accepted or parent
        return made

    async def stage(self, cluster: str, stage: Stage, parent: HarnessSpec, labelled: list[Labelled],
                    seed: int, cancel: CancelToken | None) -> Toolmaking:
        shown, heldout = self.split(stage, labelled, seed)
        base = {c.stage: c.source for c in parent.code_sections if c.stage in ("solve", "answer")}
        record = Toolmaking(cluster=cluster, stage=stage, parent=parent, writer=self.writer.model.name,
                            shown=[i.task.id for i in shown], heldout=[i.task.id for i in heldout],
                            parent_rewards=[])
        if len(heldout) < self.config.min_heldout or not shown:
            record.reason = (f"too few labelled tasks: {len(shown)} to show, {len(heldout)} held out "
                             f"(needs {self.config.min_heldout})")
            return record
        start = time.monotonic()
        record.parent_rewards = [s.reward for s in await trial(base, heldout)] if base else \
            [i.reward for i in heldout]
        if record.parent_mean >= 1.0:
            record.reason = f"nothing to gain: the parent earns 1.00 on all {len(heldout)} held-out tasks"
            return record
        examples = [Example(task=i.task, answer=correct_answer(i), given=i.answer) for i in shown]
        drafts = await self.writer.write(stage, examples, self.config.candidates, seed, record.cost, cancel)
        record.candidates = [Candidate(draft=d) for d in drafts]
        await self.try_on(record.candidates, base, shown, heldout=False)
        repaired = await self.repair(record, examples, base, shown, seed, cancel)
        await self.try_on(record.candidates + repaired, base, heldout, heldout=True)
        record.candidates += repaired
        record.trial_s = time.monotonic() - start - record.cost.wall_s
        self.decide(record, base)
        return record

    def split(self, stage: Stage, labelled: list[Labelled],
              seed: int) -> tuple[list[Labelled], list[Labelled]]:
        """Shown: tasks with a known correct answer — for an answer stage, first those the parent answered
        and lost (its form is the material) — in a seeded order; held out: all the others."""
        order = sorted(labelled, key=lambda i: zlib.crc32(f"{seed}:{i.task.id}".encode()))
        eligible = [i for i in order if correct_answer(i) is not None]
        if stage == "answer":
            eligible.sort(key=lambda i: not (i.answer is not None and i.reward < 1.0))
        shown = eligible[: self.config.shown]
        return shown, [i for i in order if i not in shown]

    @staticmethod
    async def try_on(candidates: list[Candidate], base: dict[str, str], labelled: list[Labelled],
                     heldout: bool) -> None:
        for candidate in candidates:
            if candidate.draft.source is None:
                continue
            scored = await trial(base | {candidate.draft.stage: candidate.draft.source}, labelled)
            if heldout:
                candidate.heldout = scored
            else:
                candidate.shown = scored

    async def repair(self, record: Toolmaking, examples: list[Example], base: dict[str, str],
                     shown: list[Labelled], seed: int, cancel: CancelToken | None) -> list[Candidate]:
        """The best imperfect drafts — wrong on a shown task, or holding text copied from one (a lookup of
        what it saw scores 1.00 there and abstains elsewhere) — written again after being told where they
        went wrong; a repair that repeats its draft is dropped."""
        copies = {id(c): copied(c.draft.source, examples) for c in record.candidates if c.draft.source}
        imperfect = sorted((c for c in record.candidates if c.draft.source
                            and (c.shown_mean < 1.0 or copies[id(c)])),
                           key=lambda c: -c.shown_mean)[: self.config.repairs]
        repaired = []
        for number, candidate in enumerate(imperfect):
            failures = [copied_text(i, literal) for i, literal in copies[id(candidate)]]
            failures += [failure_text(i, item.task, correct_answer(item), s.answer, s.error)
                         for i, (s, item) in enumerate(zip(candidate.shown, shown), 1) if s.reward < 1.0]
            draft = await self.writer.repair(candidate.draft, examples, failures, seed + 7 * (number + 1),
                                             record.cost, cancel)
            if draft.source != candidate.draft.source:
                repaired.append(Candidate(draft=draft))
        await self.try_on(repaired, base, shown, heldout=False)
        return repaired

    def decide(self, record: Toolmaking, base: dict[str, str]) -> None:
        cfg = self.config
        tried = [c for c in record.candidates if c.draft.source is not None]
        if not tried:
            record.reason = f"no draft defines the `{record.stage}` function: " + "; ".join(
                sorted({c.draft.problem[:120] for c in record.candidates}))
            return
        if not cfg.verify_heldout:
            chosen = next((c for c in tried if c.runs), None)
            record.reason = ("unverified: the first draft that runs" if chosen
                             else "unverified: no draft runs on the shown tasks")
        else:
            chosen = max(tried, key=lambda c: (c.heldout_mean, c.shown_mean, -len(c.draft.source)))
            gain = chosen.heldout_mean - record.parent_mean
            won = sum(s.reward > p for s, p in zip(chosen.heldout, record.parent_rewards))
            lost = sum(s.reward < p for s, p in zip(chosen.heldout, record.parent_rewards))
            verdict = (f"best of {len(tried)}: held-out {chosen.heldout_mean:.2f} vs parent "
                       f"{record.parent_mean:.2f} on {len(record.heldout)} tasks ({won} won, {lost} lost)")
            if gain < cfg.min_gain or won - lost < cfg.min_net_wins:
                record.reason = (f"rejected, {verdict}: needs +{cfg.min_gain:.2f} and {cfg.min_net_wins} "
                                 f"more won than lost")
                return
            record.reason = f"accepted, {verdict}"
        if chosen is not None:
            record.accepted = with_code(record.parent, base | {record.stage: chosen.draft.source},
                                        record.writer)
            record.evidence = chosen.heldout


def with_code(parent: HarnessSpec, code: dict[str, str], writer: str) -> HarnessSpec:
    """The parent carrying these code sections (stage → source), named like any variant of its root
    seed; lineage lives in the envelope."""
    data = parent.model_dump(mode="json")
    kept = [c.model_dump(mode="json") for c in parent.code_sections if c.stage not in code]
    data["code"] = kept + [{"stage": stage, "source": source} for stage, source in sorted(code.items())]
    digest = hashlib.sha256(json.dumps(data["code"], sort_keys=True).encode()).hexdigest()
    data["name"] = f"{root_name(parent.name)}~{digest[:6]}"
    stages = " and ".join(f"`{stage}`" for stage in sorted(code))
    data["description"] = (f"{parent.description.split(VARIANT)[0]}{VARIANT}with {stages} code written for "
                           f"its cluster's tasks and accepted on tasks its writer did not see.")
    data["envelope"] = {"origin": "synthesized", "parent_id": parent.id, "generator": writer}
    return parse_spec(data)
