"""bench/token_floor.py: per type, the cheapest harness of a stream run at the reward the arm earned there."""

import json

import pytest

from jitagent.benchmark.ledger import Ledger


@pytest.fixture
def token_floor(bench_script):
    return bench_script("token_floor")


def unit(arm, order, kind, reward, harness, tokens, examples=0):
    return {"arm": arm, "task_id": f"{kind}-{order}", "repeat": 0, "order": order, "type": kind,
            "reward": reward, "harness": harness, "examples": examples, "execution_tokens": tokens,
            "synthesis_tokens": 0, "repair_tokens": 0, "error": None, "passed": reward == 1.0,
            "budget_exhausted": False}


def test_the_floor_is_the_cheapest_harness_at_the_arms_reward_and_never_above_the_arm(token_floor, tmp_path):
    rows = []
    for order in range(6):
        rows += [unit("fixed:pot", order, "a", 1.0, "pot", 300), unit("jit", order, "a", 1.0, "big", 900),
                 unit("fixed:pot", order + 6, "b", 0.0, "pot", 400),
                 unit("jit", order + 6, "b", 1.0, "pot", 500, examples=2)]
    rows[1]["execution_tokens"] = None  # unknown is left out, not zero
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    found = {f.type: f for f in token_floor.floors(Ledger(tmp_path / "results.jsonl"), "jit", None, 0.02, 5)}
    assert (found["a"].floor, found["a"].harness, found["a"].tokens) == (300, "pot", 900)
    assert (found["b"].floor, found["b"].harness) == (500, "")  # only the arm's shown-examples runs earn 1.0
    text = token_floor.report(list(found.values()), "jit")
    assert "12 tasks: jit 700 tokens a task" in text and "the floor at the same reward per type 400" in text
    last = token_floor.floors(Ledger(tmp_path / "results.jsonl"), "jit", 6, 0.02, 5)
    assert [f.type for f in last] == ["b"]  # the last 6 positions hold type b only


def test_a_run_without_stream_positions_says_so(token_floor, tmp_path):
    row = unit("jit", 0, "a", 1.0, "h", 10) | {"order": None}
    (tmp_path / "results.jsonl").write_text(json.dumps(row) + "\n")
    assert token_floor.floors(Ledger(tmp_path / "results.jsonl"), "jit", None, 0.02, 5) == []
    assert token_floor.report([], "jit") == "no stream task of jit to read"
