"""Write N candidates, validate them up the ladder, repair the broken ones (≤ 2 rounds), select one."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field

from jitagent.harness.spec import HarnessSpec
from jitagent.improvement.synthesis.edit import edit_schema, full_spec_schema
from jitagent.improvement.synthesis.prompt import repair_messages, synthesis_messages
from jitagent.improvement.synthesis.validate import Ceilings, Check, Validated, validate_static
from jitagent.models.base import Cancelled, CancelToken, ModelClient
from jitagent.runtime.agent import Runtime
from jitagent.runtime.channel import last_of
from jitagent.runtime.events import Cost
from jitagent.sandbox.tools import TOOL_SCHEMAS
from jitagent.tasks.task import Task


class SelectionWeights(BaseModel):
    """How `selection: score` ranks valid candidates without running them: the reward their parent earned
    (or `unknown_prior`), a bonus for a dry run that answered, a cost per place down the reference list and
    per note validation left (a field clamped, an instruction dropped)."""

    unknown_prior: float = Field(0.5, ge=0, le=1)
    answered: float = Field(0.3, ge=0)
    reference_rank: float = Field(0.05, ge=0)
    note: float = Field(0.1, ge=0)


class SynthesisConfig(BaseModel):
    n: int = Field(3, ge=1, le=8)
    reference_mode: Literal["descriptions", "full"] = "descriptions"
    output: Literal["edit", "spec"] = "edit"
    temperature: float = Field(1.0, gt=0, le=2)
    max_tokens: int = Field(200, ge=32, le=4096)
    repair_rounds: int = Field(2, ge=0, le=2)
    dry_run: bool = True
    dry_run_steps: int = Field(1, ge=1, le=4)
    selection: Literal["score", "judge"] = "score"
    weights: SelectionWeights = Field(default_factory=SelectionWeights)
    ceilings: Ceilings = Field(default_factory=Ceilings)


@dataclass
class Round:
    round: int  # 0: first draft; 1-2: repairs
    output: str
    error: str  # "" when this round's output was valid


@dataclass
class Candidate:
    index: int
    rounds: list[Round] = field(default_factory=list)
    spec: HarnessSpec | None = None
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    parent_id: str | None = None
    dry_run: str = ""
    score: float | None = None

    @property
    def valid(self) -> bool:
        return self.spec is not None and all(c.ok for c in self.checks)

    @property
    def broken_before_repair(self) -> bool:
        return bool(self.rounds and self.rounds[0].error)

    @property
    def broken_after_repair(self) -> bool:
        return not self.valid

    @property
    def origin(self) -> str:
        return "repaired" if self.broken_before_repair and self.valid else "synthesized"

    def to_dict(self) -> dict:
        return {"index": self.index, "valid": self.valid, "origin": self.origin,
                "harness_id": self.spec.id if self.spec else None,
                "parent_id": self.parent_id, "broken_before_repair": self.broken_before_repair,
                "broken_after_repair": self.broken_after_repair, "rounds": [r.__dict__ for r in self.rounds],
                "checks": [c.__dict__ for c in self.checks], "notes": self.notes, "dry_run": self.dry_run,
                "score": self.score}


SYNTHESIS_PHASES = ("synthesis", "repair", "dry_run", "selection")  # a synthesis's costs, in order


@dataclass
class SynthesisCost:
    synthesis: Cost = field(default_factory=Cost)
    repair: Cost = field(default_factory=Cost)
    dry_run: Cost = field(default_factory=Cost)
    selection: Cost = field(default_factory=Cost)

    def to_dict(self) -> dict:
        return {k: getattr(self, k).__dict__ | {"tokens": getattr(self, k).tokens} for k in SYNTHESIS_PHASES}


@dataclass
class Synthesis:
    chosen: HarnessSpec | None  # None: no valid candidate
    candidates: list[Candidate]
    cost: SynthesisCost
    reason: str


@dataclass(frozen=True, kw_only=True)
class Repair:
    """What repairing a synthesis's drafts needs: the request they answered, its schema, the seed and
    cancel token of the synthesis, and where its cost is counted."""

    messages: list[dict]
    schema: dict
    seed: int
    cancel: CancelToken | None
    cost: SynthesisCost
    shown: tuple[str, ...] = ()  # the other tasks the request showed (failures): no instruction copies them


@dataclass(frozen=True)
class CandidateChecked:
    """A candidate's draft (round 0) or a repair of it went up the validation ladder."""

    index: int
    round: int
    error: str  # "" when it is valid

    @property
    def ok(self) -> bool:
        return not self.error


class Synthesizer:
    def __init__(self, meta: ModelClient, runtime: Runtime | None, config: SynthesisConfig | None = None,
                 solvers: Callable[[HarnessSpec], ModelClient] | None = None):
        """`solvers`: the solver a candidate runs with (its adapter's), for its dry run (default: the
        runtime's)."""
        self.meta = meta
        self.runtime = runtime
        self.config = config or SynthesisConfig()
        self.solvers = solvers

    async def stream(self, task: Task, references: list[HarnessSpec], prior: dict[str, float | None],
                     seed: int = 0, cancel: CancelToken | None = None, n: int | None = None,
                     failures: list[dict] | None = None, clean_parents: frozenset[str] = frozenset()
                     ) -> AsyncIterator[CandidateChecked | Synthesis]:
        """`references`: retrieved harnesses, best first; `prior`: their earned reward (None: unknown).
        `failures`: recent failures of the (single) reference, for a reflective mutation.
        `clean_parents`: harnesses that already ran cleanly on tasks like this one; their pure edits
        need no dry run."""
        cfg = self.config
        n = n or cfg.n
        cost = SynthesisCost()
        allowed = [t for t in TOOL_SCHEMAS if task.allows(t)]
        parents = {r.name: r for r in references}
        schema = edit_schema(list(parents), allowed) if cfg.output == "edit" else full_spec_schema()
        base = synthesis_messages(task.prompt, allowed, references, cfg.reference_mode, failures)
        start = time.monotonic()
        generation = await self.meta.complete(base, max_tokens=cfg.max_tokens, temperature=cfg.temperature,
                                              seed=seed, json_schema=schema, n=n, cancel=cancel)
        cost.synthesis.add(generation.usage)
        cost.synthesis.wall_s = time.monotonic() - start
        candidates = []
        for index, text in enumerate(generation.texts):
            candidate = Candidate(index)
            repair = Repair(messages=base, schema=schema, seed=seed, cancel=cancel, cost=cost,
                            shown=tuple(f["task_text"] for f in failures or ()))
            async for checked in self._checked(candidate, text, parents, task, repair):
                yield checked
            candidates.append(candidate)
        # A dry run costs a solver step; it pays only for code (which static checks cannot run on
        # the task) or to choose among several candidates of an untested parent. A lone pure edit
        # would only repeat the first step of the run that follows.
        several = sum(c.valid for c in candidates) > 1
        for candidate in candidates:
            untested = candidate.spec is not None and (candidate.spec.code is not None or (
                several and candidate.parent_id not in clean_parents))
            if candidate.valid and untested and cfg.dry_run and self.runtime is not None:
                await self._dry_run(candidate, task, cost, seed, cancel)
        valid = [c for c in candidates if c.valid]
        if not valid:
            synthesis = Synthesis(None, candidates, cost, f"no valid candidate among {len(candidates)}")
        else:
            chosen, reason = await self._select(valid, task, prior, references, cost, seed)
            synthesis = Synthesis(chosen.spec, candidates, cost, reason)
        yield synthesis

    async def synthesize(self, task: Task, references: list[HarnessSpec], prior: dict[str, float | None],
                         **kw) -> Synthesis:
        """`stream`'s outcome alone."""
        return await last_of(self.stream(task, references, prior, **kw), Synthesis)

    async def _check(self, text: str, parents, task: Task, repair: Repair) -> Validated:
        return await validate_static(text, parents, task, self.config.ceilings, repair.shown,
                                     repair.cancel.deadline if repair.cancel else None)

    async def _checked(self, candidate: Candidate, text: str, parents: dict[str, HarnessSpec], task: Task,
                       repair: Repair) -> AsyncIterator[CandidateChecked]:
        """A draft up the validation ladder and, while it is broken, repaired from the exact error (up to
        `repair_rounds`); the candidate keeps every round and ends with the last one's spec."""
        cfg, index = self.config, candidate.index
        checked = await self._check(text, parents, task, repair)
        candidate.rounds.append(Round(0, text, checked.error))
        yield CandidateChecked(index, 0, checked.error)
        for number in range(1, cfg.repair_rounds + 1):
            if checked.ok:
                break
            start = time.monotonic()
            fix = await self.meta.complete(repair_messages(repair.messages, candidate.rounds[-1].output,
                                                           checked.error),
                                           max_tokens=cfg.max_tokens, temperature=0.7,
                                           seed=repair.seed + 100 * (index + 1) + number,
                                           json_schema=repair.schema, cancel=repair.cancel)
            repair.cost.repair.add(fix.usage)
            repair.cost.repair.wall_s += time.monotonic() - start
            checked = await self._check(fix.text, parents, task, repair)
            repeated = any(r.output == fix.text for r in candidate.rounds)
            candidate.rounds.append(Round(number, fix.text, checked.error))
            yield CandidateChecked(index, number, checked.error)
            if repeated:  # the model answers the error with the same output: another round repeats it
                break
        candidate.checks, candidate.notes = checked.checks, checked.notes
        if checked.spec is not None:
            candidate.parent_id = checked.spec.envelope.parent_id
            candidate.spec = checked.spec.derive(
                origin="repaired" if candidate.broken_before_repair else "synthesized",
                parent_id=checked.spec.envelope.parent_id, generator=self.meta.name)

    async def _dry_run(self, candidate: Candidate, task: Task, cost: SynthesisCost, seed: int,
                       cancel: CancelToken | None) -> None:
        """Rung 5: run on the task with a step cap; a harness error (not a wrong answer) breaks it."""
        solver = await asyncio.to_thread(self.solvers, candidate.spec) if self.solvers else None
        result = await self.runtime.run(candidate.spec, task, seed=seed, max_steps=self.config.dry_run_steps,
                                        verify_answer=False, deadline=cancel.deadline if cancel else None,
                                        solver=solver)
        if cancel is not None and cancel.is_cancelled():
            raise Cancelled("synthesis cancelled during a dry run")
        cost.dry_run.add_cost(result.cost)
        stage_failure = result.stop.text if result.stop and result.stop.cause == "stage_failure" else None
        if result.error or stage_failure:
            error = result.error or stage_failure
            candidate.checks.append(Check("dry_run", False, error))
            candidate.dry_run = f"failed: {error}"
        else:
            candidate.checks.append(Check("dry_run", True))
            candidate.dry_run = "answered" if result.answer else "ran, no answer within the step cap"

    async def _select(self, valid: list[Candidate], task: Task, prior: dict[str, float | None],
                      references: list[HarnessSpec], cost: SynthesisCost, seed: int) -> tuple[Candidate, str]:
        rank, w = {r.id: i for i, r in enumerate(references)}, self.config.weights
        for c in valid:
            earned = prior.get(c.parent_id)
            c.score = round((w.unknown_prior if earned is None else earned)
                            + w.answered * (c.dry_run == "answered")
                            - w.reference_rank * rank.get(c.parent_id, len(rank)) - w.note * len(c.notes), 4)
        if self.config.selection == "judge" and len(valid) > 1:
            shown = ("action", "planning", "tools", "limits")
            listing = "\n".join(
                f"{i + 1}. " + json.dumps({k: v for k, v in c.spec.content().items() if k in shown},
                                          separators=(",", ":")) for i, c in enumerate(valid))
            judged = await self.meta.complete(
                [{"role": "system", "content": "You pick the agent harness most likely to solve the task. "
                                               "Reply with its number."},
                 {"role": "user", "content": f"Task:\n{task.prompt}\n\nHarnesses:\n{listing}"}],
                max_tokens=8, temperature=0.0, seed=seed,
                json_schema={"type": "object",
                             "properties": {"choice": {"type": "integer",
                                                       "enum": list(range(1, len(valid) + 1))}},
                             "required": ["choice"]})
            cost.selection.add(judged.usage)
            try:
                choice = int(json.loads(judged.text)["choice"])
                if 1 <= choice <= len(valid):
                    return valid[choice - 1], f"meta-model judge chose candidate {valid[choice - 1].index}"
            except (ValueError, KeyError, TypeError):
                pass
        best = max(valid, key=lambda c: (c.score, -c.index))
        measured = "prior reward of its parent" + (", dry-run outcome" if self.config.dry_run else "")
        return best, f"best cheap score {best.score} ({measured})"
