"""bench/synthesis_cost.py: a stream arm's synthesis cost, and what its variants (a meta-model's, an
adapter's) earned against their seed."""

import gzip
import json

import pytest


@pytest.fixture
def synthesis_cost(bench_script):
    return bench_script("synthesis_cost")


def unit(arm, task, reward, route="fixed", tokens=100, synthesis=0):
    return {"arm": arm, "task_id": task, "repeat": 0, "reward": reward, "route": route, "harness": "id",
            "execution_tokens": tokens, "synthesis_tokens": synthesis, "repair_tokens": 0}


def test_variants_are_found_by_name_in_the_trajectories_and_paired_with_their_seed(synthesis_cost, tmp_path):
    rows = [unit("fixed:pot", t, 0.0) for t in "abcd"] + [
        unit("jit", "a", 1.0, "synthesized", synthesis=200),  # written and ran
        unit("jit", "b", 1.0, "exploit"),  # the same variant again
        unit("jit", "c", 0.0, "exploit", tokens=None),  # unknown: left out of the share, said
        unit("jit", "d", 0.0, "exploit")]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    names = {"a": "pot~1a2b3c", "b": "pot~1a2b3c+ex2", "c": "pot@ab12cd34", "d": "cot~9f8e7d"}
    with gzip.open(tmp_path / "trajectories.jsonl.gz", "wt") as f:
        f.writelines(json.dumps({"arm": "jit", "task_id": t, "repeat": 0, "harness": n}) + "\n"
                     for t, n in names.items())
    lines = synthesis_cost.account(tmp_path, "jit", "fixed:pot")
    assert lines[0] == ("jit: synthesis and repair 200 tokens, 40.0% of the arm's (1 units' counts unknown, "
                        "0 of them cut off in synthesis)")
    assert lines[1].startswith("  1 of 4 units on the route synthesized: 100.0%, +100.0 (")
    assert lines[2].startswith("  3 of 4 units ran a meta-model's variant (any route): 66.7%, +66.7 (")
    assert lines[3] == ("    a meta-model's variant of cot: 1 units, 0.0%, the seed itself, fixed:cot "
                        "did not run here")
    assert lines[4] == ("    a meta-model's variant of pot: 2 units, 100.0%, +100.0 (+100.0..+100.0) against "
                        "the seed itself, fixed:pot on 2")
    assert lines[5].startswith("  1 of 4 units ran an adapter (any route): 0.0%, +0.0 (")
    assert lines[6] == ("    an adapter of pot: 1 units, 0.0%, +0.0 (+0.0..+0.0) against the seed itself, "
                        "fixed:pot on 1")
