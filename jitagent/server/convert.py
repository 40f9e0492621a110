"""The pipeline's results and events as protobuf messages (tasks: jitagent.wire)."""

from __future__ import annotations

import json

from google.protobuf.timestamp_pb2 import Timestamp

from jitagent.pipeline import PipelineEvent, SolveResult
from jitagent.runtime.events import Cost, RunResult
from jitagent.v1 import jitagent_pb2 as pb
from jitagent.wire import RequestError, enum_value

MAX_N = 8
MAX_EVENT_TEXT = 20_000


def check_n(n: int) -> int:
    if n == 0:
        return 3
    if not 1 <= n <= MAX_N:
        raise RequestError("n", f"must be between 1 and {MAX_N} (or 0 for the default), got {n}")
    return n


def cost_to_proto(cost: Cost | None) -> pb.Cost:
    msg = pb.Cost(wall_s=cost.wall_s if cost else 0.0)
    if cost is not None and cost.prompt_tokens is not None:
        msg.prompt_tokens = cost.prompt_tokens
    if cost is not None and cost.completion_tokens is not None:
        msg.completion_tokens = cost.completion_tokens
    return msg


def harness_to_proto(h: dict) -> pb.Harness:
    created = Timestamp()
    created.FromNanoseconds(int(h["created_at"] * 1e9))
    return pb.Harness(
        id=h["id"],
        name=h["name"],
        description=h["description"],
        parent_id=h["parent_id"] or "",
        origin=enum_value(pb.Origin, "ORIGIN", h["origin"]),
        generator=h["generator"],
        spec_json=json.dumps(h["spec"]),
        created_at=created,
    )


def spec_to_harness(spec) -> pb.Harness:
    env = spec.envelope
    return pb.Harness(
        id=spec.id,
        name=spec.name,
        description=spec.description,
        parent_id=env.parent_id or "",
        origin=enum_value(pb.Origin, "ORIGIN", env.origin),
        generator=env.generator,
        spec_json=json.dumps(spec.model_dump(mode="json")),
    )


def arm_to_proto(arm: dict) -> pb.Arm:
    msg = pb.Arm(
        harness_id=arm["harness_id"],
        name=arm["name"],
        posterior_mean=arm["mean"],
        prior_mean=arm["prior_mean"],
        prior_weight=arm["prior_weight"],
        runs=arm["runs"],
        similarity=arm["similarity"],
    )
    if arm["mean_tokens"] is not None:
        msg.mean_tokens = arm["mean_tokens"]
    return msg


def run_to_proto(run: RunResult | None) -> pb.RunResult | None:
    if run is None:
        return None
    msg = pb.RunResult(
        task_id=run.task_id,
        harness_id=run.harness_id,
        verdict=run.verdict,
        cost=cost_to_proto(run.cost),
        error=run.error or "",
        interrupted=run.interrupted,
    )
    if run.answer is not None:
        msg.answer = run.answer
    if run.reward is not None:  # unverified: both stay absent
        msg.passed, msg.reward = run.passed, run.reward
    return msg


def synthesis_to_proto(result: SolveResult) -> pb.SynthesisResult:
    msg = pb.SynthesisResult(
        run_id=result.run_id,
        task_id=result.task_id,
        route=enum_value(pb.Route, "ROUTE", result.route),
        harness=spec_to_harness(result.harness),
        cluster=result.cluster,
        wall_s=result.wall_s,
        arms=[arm_to_proto(a) for a in result.references],
        reason=result.synthesis.reason if result.synthesis else "",
    )
    for c in result.synthesis.candidates if result.synthesis else []:
        cand = msg.candidates.add(
            index=c.index,
            valid=c.valid,
            origin=enum_value(pb.Origin, "ORIGIN", c.origin),
            harness_id=c.spec.id if c.spec else "",
            parent_id=c.parent_id or "",
            broken_before_repair=c.broken_before_repair,
            broken_after_repair=c.broken_after_repair,
            notes=c.notes,
            dry_run=c.dry_run,
        )
        if c.score is not None:
            cand.score = c.score
        for r in c.rounds:
            cand.rounds.add(round=r.round, output=r.output, error=r.error)
        for k in c.checks:
            cand.checks.add(rung=k.rung, ok=k.ok, error=k.error)
    cost = result.synthesis_cost
    msg.cost.CopyFrom(
        pb.SynthesisCost(
            synthesis=cost_to_proto(cost.synthesis),
            repair=cost_to_proto(cost.repair),
            dry_run=cost_to_proto(cost.dry_run),
            selection=cost_to_proto(cost.selection),
        )
    )
    return msg


def solve_result_to_proto(result: SolveResult) -> pb.SolveResult:
    return pb.SolveResult(
        run_id=result.run_id,
        synthesis=synthesis_to_proto(result),
        run=run_to_proto(result.run),
        bank_decision=result.bank_decision,
    )


def event_to_proto(event: PipelineEvent, run_id: str) -> pb.SolveEvent:
    msg = pb.SolveEvent(run_id=run_id)
    text, data = event.text[:MAX_EVENT_TEXT], event.data
    if event.kind == "retrieved":
        msg.retrieved.CopyFrom(pb.Retrieved(text=text, arms=[arm_to_proto(a) for a in data["references"]]))
    elif event.kind in ("candidate", "repaired"):
        getattr(msg, event.kind).CopyFrom(
            pb.CandidateChecked(index=data["candidate"] or 0, ok=data["ok"], text=text)
        )
    elif event.kind == "route":
        msg.routed.CopyFrom(
            pb.Routed(
                route=enum_value(pb.Route, "ROUTE", data["route"]),
                cluster=data["cluster"],
                text=text,
                arms=[arm_to_proto(a) for a in data["arms"]],
            )
        )
    elif event.kind == "chosen":
        msg.chosen.CopyFrom(pb.Chosen(harness_id=data["harness_id"], name=data["spec"]["name"]))
    elif event.kind == "step":
        step = event.step
        msg.step.CopyFrom(
            pb.Step(
                kind=enum_value(pb.StepKind, "STEP_KIND", step.kind),
                text=text,
                tool=step.tool or "",
                ok=bool(step.ok),
                step=step.step,
                depth=step.depth,
            )
        )
    elif event.kind == "verdict":
        msg.verdict.text = text
        if data["passed"] is not None:
            msg.verdict.passed = data["passed"]
    elif event.kind == "bank":
        msg.bank.CopyFrom(pb.BankDecision(cluster=data["cluster"], text=text))
    else:
        msg.result.CopyFrom(solve_result_to_proto(data["result"]))
    return msg
