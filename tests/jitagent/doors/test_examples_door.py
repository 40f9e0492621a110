"""Over the network: a solve of a harness that shows examples names the runs it was shown, in its `Chosen`
event and its result (a real server on a real port; the scripted model, since only the wire is tested)."""

import asyncio

from harness_bank import Outcome
from jitagent.harness.seeds import load_seeds
from jitagent.improvement.examples import with_examples
from jitagent.v1 import jitagent_pb2 as pb

from .conftest import running

VARIANT = with_examples(load_seeds()["program_of_thought"])


def solved(n: int) -> Outcome:
    return Outcome(harness_id=VARIANT.id, task_id=f"t{n}", task_text=f"What is {n} times 7?", reward=1.0,
                   prompt_tokens=10, completion_tokens=5, wall_s=0.1, cluster="type:times", task_type="times",
                   answer=str(n * 7),
                   solution=[{"role": "assistant", "content": f"```python\nprint({n} * 7)\n```"}])


def test_the_runs_shown_reach_the_client_in_the_chosen_event_and_the_result(make_config):
    async def main():
        async with running(make_config()) as (server, client):
            bank = server.solving.pipeline.bank
            bank.add_harness(VARIANT.model_dump(mode="json"))
            for n in range(1, 7):
                bank.record_outcome(solved(n))
            stored = {f"outcome:{s.outcome_id}" for s in bank.solutions("type:times", 1.0, 10)}
            assert len(stored) == 6
            shown_by_variant = []
            for n in (11, 12, 13):
                task = pb.Task(prompt=f"What is {n} times 7?", type="times")
                events = [e async for e in client.stub.Solve(pb.SolveRequest(task=task))]
                chosen = [e.chosen for e in events if e.HasField("chosen")]
                result = events[-1].result
                assert len(chosen) == 1 and list(chosen[0].examples) == list(result.examples)
                if result.harness_id == VARIANT.id:
                    shown_by_variant.append(list(result.examples))
                else:
                    assert list(result.examples) == []  # a harness without examples is shown none
            assert shown_by_variant, "the cluster's only perfect arm never ran"
            for shown in shown_by_variant:
                assert len(shown) == 2 and set(shown) <= stored  # outcomes with no server run: by outcome id
    asyncio.run(main())
