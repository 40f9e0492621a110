"""The pipeline's results and events as protobuf messages (tasks: jitagent.protocol.tasks)."""

from __future__ import annotations

import json

from harness_bank import HarnessRecord
from harness_bank.router import ArmSummary
from jitagent.harness.spec import HarnessSpec
from jitagent.improvement.synthesis.synthesize import CandidateChecked
from jitagent.protocol.records import to_message
from jitagent.protocol.tasks import enum_value
from jitagent.runtime.events import Cost, Step
from jitagent.solving.events import BankDecision, Chosen, Retrieved, Routed, SolveEvent, SolveResult
from jitagent.tasks.verifiers import Verdict
from jitagent.v1 import jitagent_pb2 as pb

MAX_EVENT_TEXT = 20_000


def cost_to_proto(cost: Cost | None) -> pb.Cost:
    msg = pb.Cost(wall_s=cost.wall_s if cost else 0.0)
    if cost is not None and cost.prompt_tokens is not None:
        msg.prompt_tokens = cost.prompt_tokens
    if cost is not None and cost.completion_tokens is not None:
        msg.completion_tokens = cost.completion_tokens
    return msg


def harness_to_proto(h: HarnessRecord) -> pb.Harness:
    msg = _harness(h.id, h.name, h.description, h.parent_id, h.origin, h.generator, h.spec)
    msg.created_at.FromNanoseconds(int(h.created_at * 1e9))
    return msg


def spec_to_harness(spec: HarnessSpec) -> pb.Harness:
    env = spec.envelope
    return _harness(spec.id, spec.name, spec.description, env.parent_id, env.origin, env.generator,
                    spec.model_dump(mode="json"))


def _harness(harness_id: str, name: str, description: str, parent_id: str | None, origin: str, generator: str,
             spec: dict) -> pb.Harness:
    return pb.Harness(id=harness_id, name=name, description=description, parent_id=parent_id or "",
                      origin=enum_value(pb.Origin, origin), generator=generator,
                      spec_json=json.dumps(spec))


def arm_to_proto(arm: ArmSummary) -> pb.Arm:
    msg = pb.Arm(
        harness_id=arm.harness_id,
        name=arm.name,
        posterior_mean=arm.mean,
        prior_mean=arm.prior_mean,
        prior_weight=arm.prior_weight,
        runs=arm.runs,
        similarity=arm.similarity,
    )
    if arm.mean_tokens is not None:
        msg.mean_tokens = arm.mean_tokens
    return msg


def synthesis_to_proto(result: SolveResult) -> pb.SynthesisResult:
    msg = pb.SynthesisResult(
        run_id=result.run_id,
        task_id=result.task_id,
        route=enum_value(pb.Route, result.route),
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
            origin=enum_value(pb.Origin, c.origin),
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
    """The flat record (`Solved`) by field name, and what a synthesis did where one ran."""
    msg = to_message(result.solved(), pb.SolveResult())
    if result.synthesis is not None:
        msg.synthesis.CopyFrom(synthesis_to_proto(result))
    return msg


def event_to_proto(event: SolveEvent, run_id: str) -> pb.SolveEvent:
    msg = pb.SolveEvent(run_id=run_id)
    match event:
        case Retrieved():
            msg.retrieved.CopyFrom(pb.Retrieved(text=_text(event.text),
                                                arms=[arm_to_proto(a) for a in event.arms]))
        case CandidateChecked():
            checked = pb.CandidateChecked(index=event.index, ok=event.ok, text=_text(event.error or "valid"))
            (msg.repaired if event.round else msg.candidate).CopyFrom(checked)
        case Routed():
            msg.routed.CopyFrom(
                pb.Routed(
                    route=enum_value(pb.Route, event.route),
                    cluster=event.cluster,
                    text=_text(event.text),
                    arms=[arm_to_proto(a) for a in event.arms],
                )
            )
        case Chosen():
            msg.chosen.CopyFrom(pb.Chosen(harness_id=event.harness.id, name=event.harness.name,
                                          examples=event.examples, evidence=event.evidence))
        case Step():
            msg.step.CopyFrom(
                pb.Step(
                    kind=enum_value(pb.StepKind, event.kind),
                    text=_text(event.text),
                    tool=event.tool or "",
                    ok=event.ok,
                    step=event.step,
                    depth=event.depth,
                )
            )
        case Verdict():
            msg.verdict.text = _text(event.detail)
            if event.passed is not None:
                msg.verdict.passed = event.passed
        case BankDecision():
            msg.bank.CopyFrom(pb.BankDecision(cluster=event.cluster, text=_text(event.text)))
        case SolveResult():
            msg.result.CopyFrom(solve_result_to_proto(event))
    return msg


def _text(text: str) -> str:
    return text[:MAX_EVENT_TEXT]
