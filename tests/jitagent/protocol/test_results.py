"""Each event of a solve becomes its own field of the proto's SolveEvent oneof, in one place."""

from harness_bank.router import ArmSummary
from jitagent.harness.seeds import load_seeds
from jitagent.improvement.synthesis.synthesize import CandidateChecked, SynthesisCost
from jitagent.protocol.results import MAX_EVENT_TEXT, event_to_proto
from jitagent.runtime.events import Step
from jitagent.solving.events import BankDecision, Chosen, Retrieved, Routed, SolveResult
from jitagent.tasks.verifiers import Verdict
from jitagent.v1 import jitagent_pb2 as pb

DIRECT = load_seeds()["direct"]
ARM = ArmSummary(harness_id=DIRECT.id, name="direct", runs=2, mean=0.75, prior_mean=0.5, prior_weight=2.0,
                 mean_tokens=None, similarity=0.3)


def converted(event) -> tuple[str, object]:
    msg = event_to_proto(event, "run-1")
    assert msg.run_id == "run-1"
    which = msg.WhichOneof("event")
    return which, getattr(msg, which)


def test_routing_and_synthesis_events_keep_their_fields():
    which, routed = converted(Routed(route="explore", cluster="type:x", text="why", arms=(ARM,)))
    assert which == "routed" and routed.route == pb.ROUTE_EXPLORE and routed.cluster == "type:x"
    arm = routed.arms[0]
    assert (arm.harness_id, arm.posterior_mean, arm.runs) == (DIRECT.id, 0.75, 2)
    assert not arm.HasField("mean_tokens")  # unknown
    assert converted(Retrieved(text="direct (0.75)", arms=(ARM,)))[1].arms[0].name == "direct"
    assert converted(CandidateChecked(1, 0, "")) == ("candidate",
                                                     pb.CandidateChecked(index=1, ok=True, text="valid"))
    which, repaired = converted(CandidateChecked(1, 2, "[spec] bad"))
    assert which == "repaired" and not repaired.ok and repaired.text == "[spec] bad"
    assert converted(Chosen(harness=DIRECT)) == ("chosen", pb.Chosen(harness_id=DIRECT.id, name="direct"))


def test_run_events_and_the_result():
    which, step = converted(Step(kind="tool", text="x" * (MAX_EVENT_TEXT + 5), tool="python", ok=False,
                                 step=2, depth=1))
    assert which == "step" and step.kind == pb.STEP_KIND_TOOL and len(step.text) == MAX_EVENT_TEXT
    assert (step.tool, step.ok, step.step, step.depth) == ("python", False, 2, 1)
    unverified = converted(Verdict(None, None, "no verifier"))[1]
    assert not unverified.HasField("passed") and unverified.text == "no verifier"
    assert converted(Verdict(True, 1.0, "ok"))[1].passed
    decision = converted(BankDecision(cluster="type:x", promoted=True, reason="first harness"))
    assert decision == ("bank", pb.BankDecision(cluster="type:x", text="promoted: first harness"))
    result = SolveResult(task_id="t", route="exploit", harness=DIRECT, cluster="type:x", synthesis=None,
                         run=None, references=[ARM], synthesis_cost=SynthesisCost(), wall_s=0.5,
                         run_id="run-1")
    which, solved = converted(result)
    assert which == "result" and solved.harness_id == DIRECT.id and solved.route == pb.ROUTE_EXPLOIT
    assert not solved.HasField("synthesis") and not solved.HasField("answer")  # nothing synthesized, nor run
