"""The JIT pipeline, top to bottom: route → retrieve → synthesize → repair → execute → verify → admit.

Plain Python usable without the server. It is the only piece that knows both the bank and
the runtime: the bank knows nothing of models, the runtime nothing of the bank.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field

from harness_bank import HarnessBank, Outcome
from jitagent.models.base import CancelToken, ModelClient
from jitagent.runtime.agent import Runtime
from jitagent.runtime.events import AgentEvent, RunResult
from jitagent.spec import HarnessSpec, parse_spec
from jitagent.synthesis.synthesize import Synthesis, SynthesisConfig, SynthesisCost, SynthesisEvent, Synthesizer
from jitagent.tasks import Task

Route = Literal["reused", "synthesized", "fallback"]


class PipelineConfig(BaseModel):
    k: int = Field(3, ge=1, le=13, description="references retrieved (small: whole archives make meta-agents worse)")
    reuse_min_runs: int = Field(4, ge=1, description="an incumbent with at least this many runs ...")
    reuse_min_reward: float = Field(0.75, ge=0, le=1, description="... and at least this mean reward is reused as is")
    learn: bool = Field(True, description="record outcomes in the bank (streaming JIT); False: static")
    keep_candidates: bool = Field(True, description="store every candidate in the bank (lineage, training data)")
    synthesis: SynthesisConfig = Field(default_factory=SynthesisConfig)


@dataclass
class PipelineEvent:
    kind: Literal["route", "retrieved", "candidate", "repaired", "chosen", "step", "verdict", "bank", "result"]
    text: str = ""
    data: dict = field(default_factory=dict)
    step: AgentEvent | None = None


@dataclass
class SolveResult:
    task_id: str
    route: Route
    harness: HarnessSpec
    cluster: str
    synthesis: Synthesis | None
    run: RunResult | None
    references: list[dict]
    synthesis_cost: SynthesisCost
    wall_s: float
    bank_decision: str = ""

    def to_dict(self) -> dict:
        return {"task_id": self.task_id, "route": self.route, "harness_id": self.harness.id, "harness_name": self.harness.name,
                "cluster": self.cluster, "references": self.references, "reason": self.synthesis.reason if self.synthesis else "",
                "candidates": [c.to_dict() for c in self.synthesis.candidates] if self.synthesis else [],
                "cost": self.synthesis_cost.to_dict() | {"execution": self.run.cost.__dict__ | {"tokens": self.run.cost.tokens} if self.run else None},
                "result": self.run.summary() if self.run else None, "bank_decision": self.bank_decision,
                "wall_s": round(self.wall_s, 3)}


class JitPipeline:
    def __init__(self, bank: HarnessBank, meta: ModelClient, solver: ModelClient, config: PipelineConfig | None = None):
        self.bank = bank
        self.meta = meta
        self.solver = solver
        self.config = config or PipelineConfig()
        self.runtime = Runtime(solver)
        self.synthesizer = Synthesizer(meta, self.runtime, self.config.synthesis)
        self._specs: dict[str, HarnessSpec] = {}

    async def stream(self, task: Task, *, execute: bool = True, seed: int = 0, cancel: CancelToken | None = None,
                     deadline: float | None = None, n: int | None = None) -> AsyncIterator[PipelineEvent]:
        start = time.monotonic()
        cancel = cancel or CancelToken()
        if deadline is not None:
            cancel.deadline = deadline if cancel.deadline is None else min(deadline, cancel.deadline)
        cluster, incumbent, hits = await asyncio.to_thread(self._route, task)
        synthesis, references, cost = None, [], SynthesisCost()
        if incumbent is not None:
            route: Route = "reused"
            spec = self._spec(incumbent["harness_id"])
            yield PipelineEvent("route", f"reused incumbent {spec.id} of {cluster} ({incumbent['runs']} runs, "
                                         f"mean reward {incumbent['mean_reward']:.2f})", {"route": route, "cluster": cluster})
        else:
            references = [h.to_dict() for h in hits]
            yield PipelineEvent("retrieved", ", ".join(f"{h.name} ({h.score:.2f})" for h in hits), {"references": references})
            specs = [self._spec(h.harness_id) for h in hits]
            async for item in self.synthesizer.stream(task, specs, {h.harness_id: h.prior_reward for h in hits}, seed, cancel, n):
                if isinstance(item, SynthesisEvent):
                    yield PipelineEvent(item.kind, item.text, {"candidate": item.candidate, "ok": item.ok})
                else:
                    synthesis = item
            cost = synthesis.cost
            if self.config.keep_candidates:
                await asyncio.to_thread(self._keep_candidates, task, synthesis)
            if synthesis.chosen is not None:
                route, spec = "synthesized", synthesis.chosen
            else:
                route, spec = "fallback", specs[0]
            yield PipelineEvent("route", f"{route}: {synthesis.reason}", {"route": route, "cluster": cluster})
        yield PipelineEvent("chosen", f"{spec.name} ({spec.id})", {"harness_id": spec.id, "spec": spec.model_dump(mode="json")})
        run, decision = None, ""
        if execute:
            async for event in self.runtime.stream(spec, task, seed=seed, cancel=cancel, deadline=deadline):
                if event.kind == "result":
                    run = event.result
                elif event.kind == "verdict":
                    yield PipelineEvent("verdict", event.text, {"passed": event.ok})
                else:
                    yield PipelineEvent("step", event.text, step=event)
            # an infrastructure failure says nothing of the harness; an unverified run waits for feedback
            if self.config.learn and run.error is None and task.verifier.kind != "none":
                decision = await asyncio.to_thread(self._admit, task, spec, run, cluster)
                yield PipelineEvent("bank", decision, {"cluster": cluster})
        result = SolveResult(task.id, route, spec, cluster, synthesis, run, references, cost, time.monotonic() - start, decision)
        yield PipelineEvent("result", run.answer or "" if run else "", {"result": result})

    async def solve(self, task: Task, **kw) -> SolveResult:
        result = None
        async for event in self.stream(task, **kw):
            if event.kind == "result":
                result = event.data["result"]
        return result

    def _route(self, task: Task):
        """Routing first: a confident incumbent of the task's cluster is reused without synthesis;
        otherwise the top-k references are retrieved. One thread hop for all the bank reads."""
        cluster = self.bank.cluster_for(task.prompt, task.type, tuple(task.tags))
        incumbent = self.bank.incumbent(cluster)
        if incumbent and incumbent["runs"] >= self.config.reuse_min_runs and incumbent["mean_reward"] >= self.config.reuse_min_reward:
            return cluster, incumbent, []
        return cluster, None, self.bank.search(task.prompt, self.config.k)

    def _spec(self, harness_id: str) -> HarnessSpec:
        """Specs are immutable by id (content digest), so parsed ones are cached."""
        spec = self._specs.get(harness_id)
        if spec is None:
            if len(self._specs) >= 4096:
                self._specs.clear()
            spec = self._specs[harness_id] = parse_spec(self.bank.get(harness_id)["spec"])
        return spec

    def _keep_candidates(self, task: Task, synthesis: Synthesis) -> None:
        for c in synthesis.candidates:
            record = c.to_dict() | {"spec": c.spec.model_dump(mode="json") if c.spec is not None and c.valid else None,
                                    "history": [r.__dict__ for r in c.rounds] + [{"checks": [k.__dict__ for k in c.checks]}]}
            self.bank.record_candidate(task.id, task.prompt, record, self.meta.name)

    def _admit(self, task: Task, spec: HarnessSpec, run: RunResult, cluster: str) -> str:
        self.bank.add_harness(spec.model_dump(mode="json"))
        decision = self.bank.record_outcome(Outcome(
            harness_id=spec.id, task_id=task.id, task_text=task.prompt, reward=run.reward,
            prompt_tokens=run.cost.prompt_tokens, completion_tokens=run.cost.completion_tokens, wall_s=run.cost.wall_s,
            verdict=run.verdict[:500], cluster=cluster, source="run"))
        return ("promoted: " if decision.promote else "kept incumbent: ") + decision.reason
