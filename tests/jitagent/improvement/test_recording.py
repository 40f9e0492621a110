"""What reaches the bank as evidence: a run its verifier did not judge (paused at the client's calls under
an answer's verifier) is not recorded, as nothing is known of it."""

import asyncio

from jitagent.harness.seeds import load_seeds
from jitagent.improvement.recording import record_verified
from jitagent.models.scripted import ScriptedModel
from jitagent.runtime.agent import Runtime
from jitagent.tasks.task import ClientTool, Task

REACT = load_seeds()["react"]
TOTAL = ClientTool(name="get_order_total", parameters={"type": "object", "properties": {
    "order_id": {"type": "string"}}})


def test_a_run_its_verifier_did_not_judge_is_not_recorded(bank):
    task = Task(id="t", prompt="What is the total of order A-1?", client_tools=[TOTAL],
                verifier={"kind": "exact", "expected": "42.50"})
    model = ScriptedModel(['{"tool": "get_order_total", "args": {"order_id": "A-1"}}'])
    run = asyncio.run(Runtime(model).run(REACT, task))
    bank.add_harness(REACT.model_dump(mode="json"))
    assert run.client_calls and run.reward is None
    assert record_verified(bank, task, REACT, run, "type:orders") is None
    assert not bank.has_outcome(REACT.id, task.id)
