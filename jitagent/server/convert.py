"""Between protobuf messages and the pipeline's objects. Bad input raises RequestError naming the field."""

from __future__ import annotations

import hashlib
import json

import regex
from pydantic import ValidationError

from jitagent.pipeline import SolveResult
from jitagent.runtime.events import Cost, RunResult
from jitagent.spec import format_validation_error
from jitagent.tasks import Task
from jitagent.v1 import jitagent_pb2 as pb

MAX_N = 8


class RequestError(ValueError):
    """A bad request; the message starts with the offending field."""


def task_from_proto(msg: pb.Task, where: str = "task") -> Task:
    if not msg.prompt.strip():
        raise RequestError(f"{where}.prompt: must not be empty")
    verifier = {"kind": msg.verifier.kind or "none"}
    for key in ("expected", "pattern", "tests", "command"):
        if getattr(msg.verifier, key):
            verifier[key] = getattr(msg.verifier, key)
    if msg.verifier.tolerance:
        verifier["tolerance"] = msg.verifier.tolerance
    verifier["case_sensitive"] = msg.verifier.case_sensitive
    try:
        task = Task(id=msg.id or "task-" + hashlib.sha256(msg.prompt.encode()).hexdigest()[:10], prompt=msg.prompt, type=msg.type or None,
                    tags=list(msg.tags), tools=list(msg.tools) or None, files=dict(msg.files),
                    public_tests=msg.public_tests or None, verifier=verifier)
    except ValidationError as exc:
        raise RequestError(f"{where}: {format_validation_error(exc)}") from None
    if task.verifier.kind == "regex":
        try:
            regex.compile(task.verifier.pattern or "")  # bounded: Task caps a pattern's length
        except regex.error as exc:
            raise RequestError(f"{where}.verifier.pattern: does not compile: {exc}") from None
    return task


def check_n(n: int) -> int:
    if n == 0:
        return 3
    if not 1 <= n <= MAX_N:
        raise RequestError(f"n: must be between 1 and {MAX_N} (or 0 for the default), got {n}")
    return n


def cost_to_proto(cost: Cost | None) -> pb.Cost:
    msg = pb.Cost(wall_s=cost.wall_s if cost else 0.0)
    if cost is not None and cost.prompt_tokens is not None:
        msg.prompt_tokens = cost.prompt_tokens
    if cost is not None and cost.completion_tokens is not None:
        msg.completion_tokens = cost.completion_tokens
    return msg


def harness_to_proto(h: dict) -> pb.Harness:
    return pb.Harness(id=h["id"], name=h["name"], description=h["description"], parent_id=h["parent_id"] or "",
                      origin=h["origin"], generator=h["generator"], spec_json=json.dumps(h["spec"]), created_at=h["created_at"])


def spec_to_harness(spec) -> pb.Harness:
    env = spec.envelope
    return pb.Harness(id=spec.id, name=spec.name, description=spec.description, parent_id=env.parent_id or "",
                      origin=env.origin, generator=env.generator, spec_json=json.dumps(spec.model_dump(mode="json")))


def run_to_proto(run: RunResult | None) -> pb.RunResult | None:
    if run is None:
        return None
    return pb.RunResult(task_id=run.task_id, harness_id=run.harness_id, answer=run.answer or "", passed=run.passed,
                        reward=run.reward, verdict=run.verdict, cost=cost_to_proto(run.cost), error=run.error or "")


def synthesis_to_proto(result: SolveResult) -> pb.SynthesisResult:
    msg = pb.SynthesisResult(task_id=result.task_id, route=result.route, harness=spec_to_harness(result.harness),
                             cluster=result.cluster, wall_s=result.wall_s,
                             reason=result.synthesis.reason if result.synthesis else "")
    for arm in result.references:  # the router's arms: posterior mean, prior, runs in the cluster
        msg.references.add(harness_id=arm["harness_id"], name=arm["name"], score=arm["mean"],
                           similarity=arm["similarity"], prior_reward=arm["prior_mean"], prior_runs=arm["runs"])
    for c in (result.synthesis.candidates if result.synthesis else []):
        cand = msg.candidates.add(index=c.index, valid=c.valid, origin=c.origin, harness_id=c.spec.id if c.spec else "",
                                  parent_id=c.parent_id or "", broken_before_repair=c.broken_before_repair,
                                  broken_after_repair=c.broken_after_repair, notes=c.notes, dry_run=c.dry_run)
        if c.score is not None:
            cand.score = c.score
        for r in c.rounds:
            cand.rounds.add(round=r.round, output=r.output, error=r.error)
        for k in c.checks:
            cand.checks.add(rung=k.rung, ok=k.ok, error=k.error)
    cost = result.synthesis_cost
    msg.cost.CopyFrom(pb.SynthesisCost(synthesis=cost_to_proto(cost.synthesis), repair=cost_to_proto(cost.repair),
                                       dry_run=cost_to_proto(cost.dry_run), selection=cost_to_proto(cost.selection)))
    return msg


def solve_result_to_proto(result: SolveResult) -> pb.SolveResult:
    return pb.SolveResult(synthesis=synthesis_to_proto(result), run=run_to_proto(result.run),
                          bank_decision=result.bank_decision)
