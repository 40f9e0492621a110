"""`jitagent bench --stream` mechanics with scripted models (unit tests: no real model runs here)."""

import asyncio
import json

import pytest

from jitagent.benchmark.curve import (
    ORACLE,
    best_fixed,
    oracle,
    paired,
    regret_curve,
    stream_rows,
    synthesis_account,
)
from jitagent.benchmark.ledger import Ledger
from jitagent.benchmark.stream import Stream, StreamConfig, run_stream
from jitagent.improvement.retrain import Retrainer
from jitagent.tasks.suites.external import GYM_SPLIT_SEEDS, _gym_seed, _stream_seed
from jitagent.tasks.task import load_stream

from .test_benchmark import make_bench


def make_stream(tmp_path, arms=("fixed", "jit_stream"), per_family=3, **config):
    bench = make_bench(tmp_path, arms=arms, per_split={"final": per_family}, fixed_top=1, **config)
    return Stream(bench, StreamConfig(per_family=per_family, window=2))


def test_every_arm_answers_the_same_stream_position_by_position_and_jit_outcomes_arrive_as_reports(tmp_path):
    stream = make_stream(tmp_path)
    asyncio.run(stream.run(progress=False))
    rows = stream_rows(stream.bench.ledger)
    fixed = [a for a in rows if a.startswith("fixed:")]
    assert fixed == [f"fixed:{n}" for n in stream.bench.fixed_seeds()] and "jit_stream" in rows
    assert all(list(r) == list(range(6)) for r in rows.values())  # 2 families × 3, every arm, every position
    assert [rows["jit_stream"][k]["task_id"] for k in range(6)] == [t.id for t in stream.tasks]
    for row in rows["jit_stream"].values():
        assert row["prompt_tokens"] is not None and row["completion_tokens"] is not None
    bank = stream.bench.stream_pipeline(tmp_path / "out" / "jit_stream-stream.db").bank
    sources = [r["source"] for r in bank.store.query("SELECT source FROM outcomes")]
    assert sources == ["feedback"] * 6  # the client's report by run id, not the server's verifier
    bank.close()
    text = stream.report("jitagent bench --stream 3")
    assert "Whole stream:" in text and "Last 3 tasks:" in text and f"| {ORACLE} |" in text
    assert "| arm | 1–2 | 3–4 | 5–6 |" in text  # windows of 2
    assert "Cumulative regret" in text and "strict pass" in text
    assert "| jit_stream | 1–2 | " in text  # what changed when, per window
    assert (tmp_path / "out" / "stream-curve.png").stat().st_size > 0
    assert (tmp_path / "out" / "report.md").read_text().startswith("`jitagent bench --stream 3`")


def test_a_stream_stopped_at_task_k_goes_on_from_k_with_its_bank_as_it_was(tmp_path):
    stream = make_stream(tmp_path)
    asyncio.run(stream.run(progress=False))
    ledger = tmp_path / "out" / "results.jsonl"
    lines = ledger.read_text().splitlines()
    kept = [x for x in lines if json.loads(x)["order"] is None or json.loads(x)["order"] < 4]
    ledger.write_text("\n".join(kept) + "\n")  # as if stopped after task 4

    def outcomes():
        bank = stream.bench.stream_pipeline(tmp_path / "out" / "jit_stream-stream.db").bank
        n = bank.store.query("SELECT COUNT(*) FROM outcomes")[0][0]
        bank.close()
        return n

    before = outcomes()
    again = make_stream(tmp_path)
    asyncio.run(again.run(progress=False))
    rerun = ledger.read_text().splitlines()[len(kept):]
    assert sorted({json.loads(x)["order"] for x in rerun}) == [4, 5]  # only what was left, every arm
    assert outcomes() == before + 2  # the same bank, two more reports: not a fresh bank from task 1


def test_a_stream_refuses_arms_it_cannot_run_in_order(tmp_path):
    with pytest.raises(ValueError, match="a stream runs the arms"):
        make_stream(tmp_path, arms=("fixed", "oracle"))


def test_a_generated_stream_has_its_own_seed_and_as_many_tasks_per_family_as_asked():
    tasks = load_stream("reasoning_gym", 4)
    families = {t.type for t in tasks}
    assert len(tasks) == 4 * len(families) == 40 and len({t.id for t in tasks}) == 40
    split_seeds = {_gym_seed(f, s) for f in families for s in GYM_SPLIT_SEEDS}
    assert not {t.verifier.seed for t in tasks} & split_seeds  # never a split's tasks
    assert [t.id for t in load_stream("reasoning_gym", 4)] == [t.id for t in tasks]  # seeded
    other = load_stream("reasoning_gym", 4, seed=7007)
    assert {t.prompt for t in other} != {t.prompt for t in tasks}
    first = [t.type for t in tasks[:10]]
    assert len(set(first)) > 3  # interleaved, not family by family


def test_a_stream_seed_that_lands_on_a_splits_seed_is_refused():
    with pytest.raises(ValueError, match="a split's seed"):
        _stream_seed("chain_sum", GYM_SPLIT_SEEDS["final"])  # the final split's seed for every family


def _rows(arm, rewards, family=lambda k: "a" if k % 2 else "b"):
    return [{"arm": arm, "task_id": f"t{k}", "type": family(k), "repeat": 0, "order": k, "reward": r,
             "passed": r == 1, "error": None, "execution_tokens": 10, "synthesis_tokens": 0,
             "repair_tokens": 0, "prompt_tokens": 8, "completion_tokens": 2, "wall_s": 1.0,
             "route": "exploit"}
            for k, r in enumerate(rewards)]


def test_the_curve_pairs_by_position_picks_the_best_fixed_in_hindsight_and_the_oracle_per_family(tmp_path):
    ledger = Ledger(tmp_path / "results.jsonl")
    for row in (_rows("fixed:x", [1, 0, 1, 0]) + _rows("fixed:y", [0, 1, 0, 0])
                + _rows("jit", [1, 1, 1, 1])):
        ledger.add(row)
    ledger.add(_rows("fixed:x", [0, 0, 0, 0, 1])[4])  # position 4: only one arm finished it
    rows = stream_rows(ledger)
    assert all(list(r) == [0, 1, 2, 3] for r in rows.values())  # the paired prefix
    assert best_fixed(rows) == "fixed:x"
    best = oracle(rows)  # family "b" (even positions): x; family "a" (odd): y
    assert [best[k]["reward"] for k in range(4)] == [1, 1, 1, 0]
    assert paired(rows["jit"], rows["fixed:x"], [0, 1, 2, 3])[0] == 0.5
    assert regret_curve(rows["fixed:x"], best, [0, 1, 2, 3]) == [0, 1, 1, 1]
    rows["jit"][1] |= {"route": "synthesized", "synthesis_tokens": 30}  # ran a meta-model's variant
    rows["jit"][2] |= {"route": "fallback", "synthesis_tokens": 10}  # its synthesis wrote nothing valid
    rows[ORACLE] = best
    table = synthesis_account(rows, ["fixed:x", "fixed:y", "jit"], "fixed:x", [0, 1, 2, 3])
    # one unit on a variant (reward 1, against x's 0 and the oracle's 1), one fallback, 40 of 80 tokens
    assert "| jit | 1 | 100.0% | +100.0 (+100.0 to +100.0) | +0.0 (+0.0 to +0.0) | 1 | 40 | 50.0% |" in table


def test_a_piped_stream_prints_a_line_per_unit_of_the_screen_the_warm_up_and_the_stream(tmp_path, capsys):
    stream = make_stream(tmp_path, arms=("fixed", "jit_examples"))
    asyncio.run(stream.run(progress=True))  # stderr is captured here: not a terminal
    err = capsys.readouterr().err.splitlines()
    assert sum(x.startswith("[stream ") for x in err) == 6
    assert any(x.startswith("[score:direct ") for x in err) and any(x.startswith("[warm ") for x in err)
    assert err[-1].startswith("[stream 6/6] ") and "jit_examples" in err[-1]


def test_the_stream_pauses_while_its_adapter_trains_and_counts_the_training_apart(tmp_path, monkeypatch):
    trained = []

    async def train(self):  # the real training is tested in improvement/test_retrain.py
        await asyncio.sleep(0.05)
        trained.append(self.jobs)
    monkeypatch.setattr(Retrainer, "_train", train)
    bench = make_bench(tmp_path, arms=("fixed", "jit_stream"), per_split={"final": 3}, fixed_top=1)
    stream = Stream(bench, StreamConfig(per_family=3, window=2, retrain_every=2))
    asyncio.run(stream.run(progress=False))
    jobs = [json.loads(x) for x in (tmp_path / "out" / "training.jsonl").read_text().splitlines()]
    assert trained == [1, 2, 3] and [j["after"] for j in jobs] == [1, 3, 5]  # every 2 reports, awaited
    assert "Adapter trainings (the stream paused while each ran): 3" in stream.report("bench")


def test_a_practising_stream_hands_failures_their_check_waits_and_counts_the_practice_apart(tmp_path):
    bench = make_bench(tmp_path, arms=("fixed", "jit_stream"), per_split={"final": 3}, fixed_top=1)
    stream = Stream(bench, StreamConfig(per_family=3, window=2, practice=1))
    asyncio.run(stream.run(progress=False))
    failed = [r for r in stream_rows(bench.ledger)["jit_stream"].values() if r["reward"] < 1]
    lines = [json.loads(x) for x in (tmp_path / "out" / "practice.jsonl").read_text().splitlines()]
    assert failed and [p["order"] for p in lines] == [r["order"] for r in failed]  # each failure, awaited
    assert all(p["tries"] == 1 and p["wall_s"] >= 0 for p in lines)
    bank = bench.stream_pipeline(tmp_path / "out" / "jit_stream-stream.db").bank
    assert bank.practice_tally().tries == len(lines)
    assert bank.store.query("SELECT COUNT(*) FROM outcomes")[0][0] == 6  # practice is never an outcome
    bank.close()
    assert f"Practice of jit_stream (the stream paused while it ran): {len(lines)} failed tasks handed" \
        in stream.report("bench --practice 1")


def test_an_untyped_stream_gives_the_jit_arm_no_family_and_the_report_still_reads_them(tmp_path):
    bench = make_bench(tmp_path, arms=("fixed", "jit_stream"), per_split={"final": 3}, fixed_top=1)
    stream = Stream(bench, StreamConfig(per_family=3, window=2, untyped=True))
    asyncio.run(stream.run(progress=False))
    bank = bench.stream_pipeline(tmp_path / "out" / "jit_stream-stream.db").bank
    clusters = {r["cluster"] for r in bank.store.query("SELECT cluster FROM outcomes")}
    bank.close()
    assert clusters and all(c.startswith("auto:") for c in clusters)  # by their text: no type, no tag
    assert "| jit_stream | 0." in stream.report("bench --untyped").split("per family")[1]  # by family


def test_a_routing_only_stream_draws_no_variant_where_the_same_stream_otherwise_does(tmp_path):
    def routes(folder, routing_only):
        bench = make_bench(tmp_path / folder, arms=("fixed", "jit_stream"), per_split={"final": 3},
                           fixed_top=1)
        asyncio.run(Stream(bench, StreamConfig(per_family=3, window=2, routing_only=routing_only)).run(
            progress=False))
        rows = stream_rows(bench.ledger)["jit_stream"].values()
        return {r["route"] for r in rows}, sum(r["synthesis_tokens"] or 0 for r in rows)

    drawn = {"synthesized", "variant", "fallback"}
    (default, written), (routing, none) = routes("default", False), routes("routing", True)
    assert default & drawn and written > 0
    assert not routing & drawn and none == 0
    with pytest.raises(ValueError, match="routing-only"):  # its adapters could never be routed to
        Stream(make_bench(tmp_path / "x", arms=("fixed", "jit_stream")),
               StreamConfig(per_family=3, routing_only=True, retrain_every=2))


def test_a_report_is_recomputed_from_the_ledger_alone_running_nothing(tmp_path):
    stream = make_stream(tmp_path)
    asyncio.run(stream.run(progress=False))
    ledger = (tmp_path / "out" / "results.jsonl").read_text()
    text = run_stream(stream.bench.config, stream.config, stream.bench.solver, stream.bench.meta, "again",
                      report_only=True)
    assert (tmp_path / "out" / "results.jsonl").read_text() == ledger  # nothing ran
    assert text == (tmp_path / "out" / "report.md").read_text().rstrip("\n") and "Whole stream:" in text
