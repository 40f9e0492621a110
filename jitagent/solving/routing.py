"""Routing, decided in one function (`Routing.decide`): a task's cluster, the router's draw over its arms,
and what that draw comes to — the arm that runs, a mutation of it that costs no meta-model call (a
`variant`: shown the cluster's verified solutions, or run with an adapter), a synthesis by the meta-model
with the parent's recent failures, and whether code is written for the cluster meanwhile. The pipeline only
carries the decision out; the one thing it adds is `fallback`, where a synthesis writes nothing valid.
"""

from __future__ import annotations

import functools
import random
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

from harness_bank import HarnessBank
from harness_bank.records import ArmEvidence
from harness_bank.router import ArmSummary, Route, RouteChoice, Router
from jitagent.harness.seeds import native_seeds, offered
from jitagent.harness.spec import HarnessSpec
from jitagent.improvement.synthesis.synthesize import Synthesis
from jitagent.improvement.toolshop import Toolshop
from jitagent.improvement.variants import free_variant
from jitagent.solving.config import PipelineConfig
from jitagent.tasks.task import Task


@dataclass(frozen=True)
class RouteDecision:
    """Where a task goes. `spec`: the harness that runs (None: a synthesis writes it, from `failures` where it
    mutates the cluster's arm `choice.arm`); `text`: why, as the `Routed` event says it."""

    cluster: str
    choice: RouteChoice
    route: Route
    spec: HarnessSpec | None
    text: str = ""
    failures: list[dict] = field(default_factory=list)

    @property
    def write_code(self) -> bool:
        return self.choice.write_code

    @property
    def arms(self) -> tuple[ArmSummary, ...]:
        return tuple(a.summary() for a in self.choice.arms)

    def says(self, route: Route, synthesis: Synthesis | None) -> str:
        """Why the task went where it did, once a synthesis (if any) has run."""
        if synthesis is None:
            return self.text
        kind = "mutation of " + self.choice.arm.evidence.name if self.choice.arm else "cold cluster"
        return f"{route} ({kind}; {self.choice.reason}): {synthesis.reason}"


class Routing:
    """The bank reads and the router's draw behind one decision (a thread's: the bank reads block)."""

    def __init__(self, bank: HarnessBank, config: PipelineConfig, toolshop: Toolshop,
                 spec_of: Callable[[str], HarnessSpec], base_model: str):
        self.bank, self.config, self.toolshop, self.spec_of = bank, config, toolshop, spec_of
        self.router = Router(config.router)
        self.base_model = base_model  # the solver's, whose adapters a variant may run with

    def decide(self, task: Task, seed: int, pool: str = "") -> RouteDecision:
        """The draw is seeded by (seed, task), so a run repeats. `pool`: the memory the task's caller
        learns in and from (a tenant's; "": the one there is without tenants)."""
        cluster = self.bank.cluster_for(task.prompt, task.type, tuple(task.tags), pool)
        evidence, base = self._evidence(task, cluster)
        rng = random.Random(zlib.crc32(f"{seed}:{task.id}:{task.prompt}".encode()))
        code_due = functools.partial(self.toolshop.due, cluster) if self.config.online_tools else None
        choice = self.router.choose(evidence, base, rng, seen=self.bank.tasks_seen(cluster),
                                    code_due=code_due, first=self._baselines(task))
        if choice.route != "synthesized":
            spec = self.spec_of(choice.arm.evidence.harness_id)
            return RouteDecision(cluster, choice, choice.route, spec,
                                 f"{choice.route} {spec.name} in {cluster}: {choice.reason}")
        if choice.arm is None:  # a cold cluster: nothing to mutate, a harness is written from references
            return RouteDecision(cluster, choice, "synthesized", None)
        taken = {a.evidence.harness_id for a in choice.arms} | self.bank.retired(cluster)
        parent = self.spec_of(choice.arm.evidence.harness_id)
        if free := free_variant(self.bank, self.spec_of, parent, taken, task, cluster, self.base_model):
            spec, offers = free
            return RouteDecision(cluster, choice, "variant", spec, f"variant (mutation of "
                                 f"{choice.arm.evidence.name}; {choice.reason}): {spec.name}, {offers}")
        failures = (self.bank.failures(cluster, parent.id, self.config.failures, besides=task.prompt)
                    if self.config.failures else [])
        return RouteDecision(cluster, choice, "synthesized", None, failures=failures)

    def ranked(self, task: Task, cluster: str) -> list[str]:
        """The cluster's arms for `task`, best first as the router ranks them (no draw)."""
        evidence, base = self._evidence(task, cluster)
        return [a.evidence.harness_id for a in sorted(self.router.arms(evidence, base), key=self.router.rank)]

    @staticmethod
    def _baselines(task: Task) -> frozenset[str]:
        """The model as its users serve it, where the task carries the client's functions."""
        return frozenset(native_seeds()) if task.client_tools else frozenset()

    def _evidence(self, task: Task, cluster: str) -> tuple[list[ArmEvidence], float]:
        """The arms' evidence the router weighs, and the task's base rate. A task with the client's functions
        always has the seeds that hand them to the model's own template among its arms (the model as its
        users serve it, what a harness must beat there); a task without them has no arm that differs only
        where the client has functions."""
        natives = native_seeds()
        include, exclude = (natives, ()) if task.client_tools else ((), natives)
        evidence, base = self.bank.arm_evidence(task.prompt, cluster, self.config.router.references,
                                                include=include, exclude=exclude)
        evidence = [e for e in evidence if offered(self.spec_of(e.harness_id), task)]  # natives' variants
        if not self.config.runs_code:  # code sections would run unconfined here (JitPipeline.confine)
            evidence = [e for e in evidence if not self.spec_of(e.harness_id).code_sections]
        return evidence, base
