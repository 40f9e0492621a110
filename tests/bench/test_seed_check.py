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


def test_the_runtime_digest_covers_the_seeds_and_the_runtime(seed_check):
    digest = seed_check.runtime_digest
    assert digest() == digest() and len(digest()) == 16
    for source in seed_check.RUNTIME_SOURCES:
        assert (ROOT / source).exists(), source


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
