"""Every seed on a fixed task set with the real solver model, against the committed baseline — run only
when the runtime (the files that decide how a seed behaves) changed since the baseline was recorded:
re-record it with `python bench/seed_check.py --out bench/results/seed-check/results.jsonl` once it holds."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / "bench/results/seed-check/results.jsonl"


@pytest.fixture
def seed_check(bench_script):
    return bench_script("seed_check")


@pytest.mark.slow
def test_every_seed_holds_its_baseline_when_the_runtime_changed(tmp_path, seed_check):
    check = seed_check
    baseline = check.read_ledger(BASELINE)
    assert baseline, f"no baseline at {BASELINE}: record one with bench/seed_check.py"
    if {unit["runtime"] for unit in baseline} == {check.runtime_digest()}:
        pytest.skip("the runtime is as it was when the baseline was recorded")
    assert check.main(["--out", str(tmp_path / "now.jsonl"), "--baseline", str(BASELINE)]) == 0


def test_the_budget_is_the_models_time_on_a_machine_of_another_speed(seed_check):
    baseline = [{"probe_s": 4.0}, {"probe_s": 4.2}, {"probe_s": 3.8}]
    assert seed_check.budget_scale(baseline, 6.0) == pytest.approx(1.5)  # a slower machine: more time
    assert seed_check.budget_scale(baseline, 2.0) == pytest.approx(0.5)  # a faster one: less
    assert seed_check.budget_scale([{"seed": "direct"}], 6.0) == 1.0  # a ledger recorded before probes


def test_a_check_gives_every_unit_the_baselines_own_budget_in_this_machines_model_time(seed_check):
    baseline = [{"probe_s": 7.0, "budget_s": 52.5}] * 3
    assert seed_check.unit_budget(baseline, 3.5, 30.0) == pytest.approx(26.25)  # not 30 s x 0.5
    assert seed_check.unit_budget([], 3.5, 30.0) == 30.0  # recording: the budget asked for
    assert seed_check.unit_budget([{"probe_s": 7.0}], 3.5, 30.0) == pytest.approx(15.0)  # no budget recorded


def test_units_the_baseline_finished_at_the_budgets_edge_do_not_count_as_going_out_of_it(seed_check):
    def unit(task, wall, out=False, budget=50.0, seed="s"):
        return {"seed": seed, "task_id": task, "reward": 0.0, "out_of_budget": out, "wall_s": wall,
                "budget_s": budget}

    baseline = [unit("a", 48.0), unit("b", 49.0), unit("c", 10.0), unit("d", 12.0)]
    at_edge = [unit("a", 50.0, True), unit("b", 50.0, True), unit("c", 11.0), unit("d", 12.0)]
    assert not seed_check.compare(at_edge, baseline, 0.25)[0].endswith("REGRESSED")  # the machine
    slowed = [unit("a", 50.0, True), unit("b", 49.0), unit("c", 50.0, True), unit("d", 50.0, True)]
    line = seed_check.compare(slowed, baseline, 0.25)[0]  # 2 of the 2 with room went out: the code
    assert "(2 of 2 with room)" in line and line.endswith("REGRESSED")
