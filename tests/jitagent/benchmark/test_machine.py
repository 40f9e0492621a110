"""A budget in the reference machine's model time: every unit gets it in this machine's seconds."""

import asyncio
import json
import time

import pytest

from jitagent.benchmark.machine import scaled_budget

from .test_benchmark import make_bench


def test_a_slower_machine_gets_more_seconds_and_a_faster_one_fewer():
    assert scaled_budget(30.0, 7.5, 5.0) == pytest.approx(45.0)
    assert scaled_budget(30.0, 2.5, 5.0) == pytest.approx(15.0)


def test_each_start_measures_the_machine_and_units_run_in_its_seconds_while_rows_keep_the_budget(tmp_path):
    bench = make_bench(tmp_path, arms=("fixed",), budget_s=60.0, reference_probe_s=100.0)
    bench.solver.latency_s = 0.05  # this machine: a probe takes 0.05 s, the reference's 100 s
    asyncio.run(bench.measure_machine())
    measured = [json.loads(line) for line in (tmp_path / "out" / "machine.jsonl").read_text().splitlines()]
    assert len(measured) == 1 and measured[0]["reference_probe_s"] == 100.0
    assert bench.unit_budget_s == pytest.approx(scaled_budget(60.0, measured[0]["probe_s"], 100.0))
    assert 0.02 < bench.unit_budget_s < 0.2
    given, run = [], bench.runtime.run

    async def timed_run(spec, task, **kw):
        given.append(kw["deadline"] - time.monotonic())
        return await run(spec, task, **kw)

    bench.runtime.run = timed_run
    row, _ = asyncio.run(bench._execute("fixed:direct", bench.seeds["direct"], bench.tasks("final")[0], 0))
    assert bench.unit_budget_s - 0.01 < given[0] <= bench.unit_budget_s  # this machine's seconds
    assert row["budget_s"] == 60.0  # and the row says the budget asked: reused as a 60 s unit


def test_without_a_reference_the_seconds_are_this_machines(tmp_path):
    bench = make_bench(tmp_path, arms=("fixed",), budget_s=60.0)
    asyncio.run(bench.measure_machine())
    assert bench.unit_budget_s == 60.0 and not (tmp_path / "out" / "machine.jsonl").exists()
