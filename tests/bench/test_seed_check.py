"""Every seed on a fixed task set with the real solver model, against the committed baseline — run only
when the runtime (the files that decide how a seed behaves) changed since the baseline was recorded:
re-record it with `python bench/seed_check.py --out bench/results/seed-check/results.jsonl` once it holds."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / "bench/results/seed-check/results.jsonl"


def seed_check():
    spec = importlib.util.spec_from_file_location("seed_check", ROOT / "bench/seed_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_every_seed_holds_its_baseline_when_the_runtime_changed(tmp_path):
    check = seed_check()
    baseline = check.read_ledger(BASELINE)
    assert baseline, f"no baseline at {BASELINE}: record one with bench/seed_check.py"
    if {unit["runtime"] for unit in baseline} == {check.runtime_digest()}:
        pytest.skip("the runtime is as it was when the baseline was recorded")
    assert check.main(["--out", str(tmp_path / "now.jsonl"), "--baseline", str(BASELINE)]) == 0


def test_the_runtime_digest_covers_the_seeds_and_the_runtime():
    digest = seed_check().runtime_digest
    assert digest() == digest() and len(digest()) == 16
    for source in seed_check().RUNTIME_SOURCES:
        assert (ROOT / source).exists(), source
