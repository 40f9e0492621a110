"""Red team, issue 27: no field of a request costs the server more than the request is worth. A
reasoning_gym verifier's `size` was taken up to 2**63-1 and every dataset kept forever: size 60,002 cost
69 s of server work and 1.17 GB held. Now each numeric field is bounded (INVALID_ARGUMENT, one line)
and the dataset cache is bounded by the entries it holds."""

from __future__ import annotations

import json

import pytest

import jitagent.tasks.suites.external as external
from jitagent.protocol.tasks import RequestError, task_from_proto
from jitagent.tasks.task import Task, TaskFileError, parse_tasks
from jitagent.v1 import jitagent_pb2 as pb

ENTRY = {"kind": "reasoning_gym", "dataset": "chain_sum", "seed": 1, "size": 4, "index": 0}


@pytest.mark.parametrize("field, value", [("size", 2**63 - 1), ("size", external.MAX_GYM_SIZE + 1),
                                          ("size", 0), ("seed", 2**63), ("seed", 10**300)])
def test_an_out_of_range_gym_field_is_one_invalid_argument_line(field, value):
    gym = pb.ReasoningGymEntry(**{k: v for k, v in ENTRY.items() if k != "kind"})
    if value < 2**63:  # what the wire (int64) can carry at all
        setattr(gym, field, value)
        with pytest.raises(RequestError) as raised:
            task_from_proto(pb.Task(prompt="Sum these.", verifier=pb.Verifier(reasoning_gym=gym)))
        assert raised.value.violations[0][0] == "task" and field in str(raised.value)
        assert "\n" not in str(raised.value)
    line = json.dumps({"id": "t", "prompt": "Sum these.", "verifier": {**ENTRY, field: value}})
    with pytest.raises(TaskFileError) as raised:
        parse_tasks([line])
    assert field in str(raised.value) and "\n" not in str(raised.value)


def test_the_largest_size_allowed_still_makes_a_valid_task():
    task = Task(id="t", prompt="Sum these.", verifier={**ENTRY, "size": external.MAX_GYM_SIZE,
                                                        "index": external.MAX_GYM_SIZE - 1})
    assert task.verifier.size == external.MAX_GYM_SIZE


def test_the_dataset_cache_is_bounded_by_the_entries_it_holds(monkeypatch):
    made = []
    monkeypatch.setattr("reasoning_gym.create_dataset",
                        lambda name, size, seed: made.append((name, seed, size)) or [None] * size)
    monkeypatch.setattr(external, "_GYM_CACHE", type(external._GYM_CACHE)())
    for seed in range(20):
        external._gym_dataset("chain_sum", seed, external.MAX_GYM_SIZE)
    held = external._GYM_CACHE
    assert 0 < sum(size for _, _, size in held) <= external.GYM_CACHE_ENTRIES and len(made) == 20
    external._gym_dataset("chain_sum", 19, external.MAX_GYM_SIZE)  # the most recent: still held
    external._gym_dataset("chain_sum", 0, external.MAX_GYM_SIZE)  # the oldest: made again
    assert len(made) == 21 and made[-1] == ("chain_sum", 0, external.MAX_GYM_SIZE)
