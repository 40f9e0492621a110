"""`jitagent bench` mechanics with scripted models (unit tests: no real model runs here)."""

import asyncio
import json

import pytest

import jitagent.runtime.agent as agent_module
from harness_bank.router import ROUTES
from jitagent.benchmark.arms import ADAPTER_ARMS, ARMS
from jitagent.benchmark.ledger import Ledger
from jitagent.benchmark.report import markdown, report
from jitagent.benchmark.runner import Bench, BenchConfig
from jitagent.benchmark.stats import bootstrap_ci, paired_difference, summarize
from jitagent.harness.seeds import seeds_for
from jitagent.improvement.training.lora import TrainConfig
from jitagent.models.scripted import ScriptedModel, instant_model


def suite(tmp_path, per_split: dict[str, int] | None = None):
    lines = []
    for split in ("learn", "score", "final"):
        for kind in ("add", "echo"):
            for i in range((per_split or {}).get(split, 2)):
                expected = i + 2 if kind == "add" else 7
                lines.append(json.dumps({"id": f"{split}-{kind}-{i}", "prompt": f"{kind} task {i} of {split}",
                                         "type": kind, "split": split,
                                         "verifier": {"kind": "numeric", "expected": expected}}))
    path = tmp_path / "tiny.jsonl"
    path.write_text("\n".join(lines))
    return str(path)


UNTRAINED = tuple(a for a in ARMS if a not in ADAPTER_ARMS)  # the adapter arms train a real model (below)


def make_bench(tmp_path, arms=UNTRAINED, per_split: dict[str, int] | None = None, **config):
    tmp_path.mkdir(parents=True, exist_ok=True)
    name = "smollm2-135m" if set(arms) & set(ADAPTER_ARMS) else "scripted"  # what an adapter is trained of
    solver = ScriptedModel(lambda m: "print(7)" if "```python" in m[-1]["content"] else "Final answer: 7",
                           name=name)
    config = BenchConfig(suite=suite(tmp_path, per_split), out=tmp_path / "out", **{"repeats": 2, "n": 1,
                                                                                      "arms": arms} | config)
    return Bench(config, solver, instant_model())


def test_all_arms_run_report_and_resume_without_rerunning_genuine_results(tmp_path):
    bench = make_bench(tmp_path)
    asyncio.run(bench.run(progress=False))
    arms = {arm for arm, _, _ in bench.ledger.units}
    assert {"oracle", "jit_static", "jit_stream", "jit_warm", "fixed:direct", "score:direct"} <= arms
    assert {a for a in arms if a.startswith("warm:")} == {f"warm:{n}" for n in bench.screened(4)}
    warm_units = [k for k in bench.ledger.units if k[0].startswith("warm:")]
    assert {t for _, t, _ in warm_units} == {t.id for t in bench.tasks("learn")}  # warmed on learn only
    # temperature 0: one run per task
    assert len([u for u in bench.ledger.units if u[0] == "fixed:direct"]) == 4
    assert len([u for u in bench.ledger.units if u[0] == "fixed:self_consistency"]) == 8  # sampled: repeats
    lines = (tmp_path / "out" / "results.jsonl").read_text().count("\n")
    traces = [json.loads(x) for x in (tmp_path / "out" / "trajectories.jsonl").read_text().splitlines()]
    assert len(traces) == lines and all(t["events"] for t in traces)  # every unit's trajectory can be read
    assert {t["route"] for t in traces if t["arm"].startswith("jit")} <= set(ROUTES)
    again = make_bench(tmp_path)
    asyncio.run(again.run(progress=False))
    assert (tmp_path / "out" / "results.jsonl").read_text().count("\n") == lines  # nothing rerun
    text = report(again, "jitagent bench --suite tiny")
    assert "| oracle |" in text and "| jit_stream |" in text and "| jit_warm |" in text
    assert "| hindsight oracle |" in text and "Warm-up on `learn`" in text
    jit_row = next(line for line in text.splitlines() if line.startswith("| jit_warm |"))
    assert ", 4 tasks |" in jit_row  # the paired difference against the best fixed seed, over 4 final tasks
    assert "| arm | add | echo |" in text  # the per-type table
    assert "| arm | units | wall p50 s | p99 s | max s | over the 60 s budget |" in text
    assert text.count("| fixed:direct | 4 |") == 1  # its wall times: 4 units
    assert (tmp_path / "out" / "pareto.png").stat().st_size > 0
    assert (tmp_path / "out" / "stream.png").stat().st_size > 0
    # the plots are linked beside report.md, so the report reads the same in any checkout
    assert "![pareto](pareto.png)" in text and str(tmp_path) not in text


def test_wall_times_are_the_median_the_99th_percentile_and_the_maximum(tmp_path):
    from jitagent.benchmark.report import wall_times
    from jitagent.benchmark.stats import wall_percentiles

    units = [{"wall_s": float(s)} for s in range(1, 101)]
    p50, p99, most = wall_percentiles(units)
    assert (p50, round(p99, 2), most) == (50.5, 99.01, 100.0)
    assert wall_percentiles([{"wall_s": 3.0}]) == (3.0, 3.0, 3.0)
    ledger = Ledger(tmp_path / "results.jsonl")
    for i, wall in enumerate([10.0, 20.0, 31.0, 45.0]):
        ledger.add({"arm": "fixed:recursive", "task_id": f"t{i}", "repeat": 0, "wall_s": wall})
    assert "| fixed:recursive | 4 | 25.5 | 44.6 | 45.0 | 2 |" in wall_times(ledger, ["fixed:recursive"], 30)


def test_the_thirds_show_the_gain_over_the_baseline_on_their_own_tasks():
    from jitagent.benchmark.report import thirds

    # easy tasks first: the raw thirds fall while the gain over the baseline on the same tasks rises
    stream = [{"task_id": f"t{i}", "order": i, "reward": r} for i, r in enumerate([1, 1, 1, 0.5, 1, 0])]
    baseline = [{"task_id": f"t{i}", "reward": r} for i, r in enumerate([1, 1, 0.5, 0.5, 0, 0])]
    assert thirds(stream, baseline) == "1.00 → 0.75 → 0.50 (+0.0 → +25.0 → +50.0)"
    assert thirds(stream, []) == "1.00 → 0.75 → 0.50"
    assert thirds([{"task_id": "t0", "order": None, "reward": 1}], baseline) == "–"


def test_infrastructure_failures_are_rerun_and_genuine_zeros_are_not(tmp_path):
    bench = make_bench(tmp_path, arms=("fixed",))
    asyncio.run(bench.run(progress=False))
    rows = bench.ledger.units
    infra = next(k for k in rows if k[0] == "fixed:direct")
    zero = next(k for k in rows if k[0] == "fixed:react")
    rows[infra]["error"] = "model failed: connection reset"
    rows[zero].update(reward=0.0, passed=False)
    path = tmp_path / "out" / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows.values()))
    again = make_bench(tmp_path, arms=("fixed",))
    before = len(path.read_text().splitlines())
    asyncio.run(again.run(progress=False))
    added = [json.loads(x) for x in path.read_text().splitlines()[before:]]
    assert [(r["arm"], r["task_id"]) for r in added] == [infra[:2]] and added[0]["error"] is None


def test_final_split_is_never_read_before_its_harness_is_chosen_and_oracle_uses_score_only(
        tmp_path, monkeypatch):
    events = []
    real_verify = agent_module.verify

    async def spy_verify(task, answer, workspace, limits=None, **kw):
        events.append(("verify", task.id))
        return await real_verify(task, answer, workspace, limits, **kw)
    from jitagent.solving.routing import Routing
    real_route = Routing.decide

    def spy_route(self, task, seed, *pool):
        events.append(("route", task.id))
        return real_route(self, task, seed, *pool)
    monkeypatch.setattr(agent_module, "verify", spy_verify)
    monkeypatch.setattr(Routing, "decide", spy_route)
    for arm in ("jit_static", "jit_stream", "jit_warm"):
        events.clear()
        bench = make_bench(tmp_path / arm, arms=(arm,))
        asyncio.run(bench.run(progress=False))
        # strictly: choose a harness for a task, then (and only then) its verifier; never a look-ahead
        events[:] = [e for e in events if e[1].startswith("final")]  # jit_warm's warm-up verifies learn tasks
        assert len(events) == 2 * 4 * 2
        for i in range(0, len(events), 2):
            assert events[i][0] == "route" and events[i + 1] == ("verify", events[i][1])
    # the fixed arms run on `final` too: final rows of the seeds that the oracle and the screen could read
    bench = make_bench(tmp_path / "oracle", arms=("fixed", "oracle"), fixed_top=2)
    asyncio.run(bench.run(progress=False))
    final_ids = {t.id for t in bench.tasks("final")}
    assert all(not arm.startswith("score:") or tid not in final_ids for arm, tid, _ in bench.ledger.units)
    choice, screened = bench.oracle_choice(), bench.fixed_seeds()
    # poison every final-split result so that a seed neither reads as best wins every final task: a choice
    # that read `final` would move to it
    winner = next(s for s in bench.seeds if s not in choice.values() and s not in screened[:2])
    assert any(arm.startswith("fixed:") for arm, tid, _ in bench.ledger.units if tid in final_ids)
    for key, row in bench.ledger.units.items():
        if row["task_id"] in final_ids:
            row["reward"] = 1.0 if key[0].endswith(f":{winner}") else 0.0
    for name in bench.seeds:  # and give the winner final rows under every arm name a reader could look for
        for task_id in final_ids:
            bench.ledger.units[(f"fixed:{name}", task_id, 0)] = {
                "arm": f"fixed:{name}", "task_id": task_id, "type": task_id.split("-")[1], "repeat": 0,
                "reward": 1.0 if name == winner else 0.0, "error": None, "execution_tokens": 1}
    assert bench.oracle_choice() == choice
    assert bench.fixed_seeds() == screened  # the screen reads `score` only, like the oracle


def test_bootstrap_ci_brackets_the_mean_and_the_paired_difference_pairs_by_task():
    low, high = bootstrap_ci([0, 1, 1, 0, 1, 1, 1, 0, 1, 1])
    assert low < 0.7 < high and low >= 0 and high <= 1
    unit = lambda t, r: {"task_id": t, "reward": r}  # noqa: E731
    arm = [unit("t3", 1.0), unit("t1", 1.0), unit("t2", 0.0), unit("t9", 1.0)]  # t9: the baseline lacks it
    base = [unit("t1", 0.0), unit("t2", 0.0), unit("t3", 1.0), unit("t4", 1.0)]  # t4: the arm lacks it
    mean, low, high, n = paired_difference(arm, base)
    assert (mean, n) == (pytest.approx(1 / 3), 3)  # t1 +1, t2 0, t3 0: by task id, not by position
    assert low <= mean <= high and low >= 0  # no pair is negative, so no resample is
    repeats = [unit("t1", 1.0), unit("t1", 0.0), unit("t2", 1.0)]  # repeats average within a task first
    assert paired_difference(repeats, [unit("t1", 0.0), unit("t2", 1.0)])[:1] == (0.25,)
    ledger = Ledger.__new__(Ledger)
    ledger.units = {("a", "t1", 0): {"arm": "a", "task_id": "t1", "repeat": 0, "reward": 1.0, "passed": True,
                                     "error": None,
                                     "route": "fixed",
                                     "synthesis_tokens": 0, "repair_tokens": 0, "execution_tokens": None,
                                     "wall_s": 1.0}}
    assert "unknown" in markdown(summarize(ledger, ["a"]))


def test_a_limit_spreads_over_task_types_and_the_oracle_can_choose_on_fewer_score_tasks(tmp_path):
    bench = make_bench(tmp_path)
    bench.config.limit, bench.config.score_limit = 2, 1
    assert sorted(t.type for t in bench.tasks("final")) == ["add", "echo"]  # the suite lists all "add" first
    assert [t.split for t in bench.tasks("score")] == ["score"]
    bench.config.score_limit = None
    assert len(bench.tasks("score")) == 2


def test_running_out_of_the_budget_is_a_genuine_zero_in_every_arm_and_is_not_rerun(tmp_path):
    bench = make_bench(tmp_path)
    bench.config.budget_s = 1e-6  # out of it at once (zero is no budget, refused)
    asyncio.run(bench.run(progress=False))
    rows = list(bench.ledger.units.values())
    assert rows and all(r["error"] is None and r["budget_exhausted"] and r["reward"] == 0.0 for r in rows)
    assert {r["arm"] for r in rows} >= {"jit_static", "jit_stream", "oracle", "fixed:direct"}
    jit = [r for r in rows if r["arm"].startswith("jit")]
    assert all((r["synthesis_tokens"] is None) == (r["harness"] == "")
               for r in jit)  # cut in synthesis: unknown
    assert all(r["synthesis_tokens"] == 0 for r in rows if r["route"] in ("exploit", "explore"))
    lines = (tmp_path / "out" / "results.jsonl").read_text().count("\n")
    asyncio.run(make_bench(tmp_path).run(progress=False))
    assert (tmp_path / "out" / "results.jsonl").read_text().count("\n") == lines
    table = markdown(summarize(bench.ledger, ["jit_static", "fixed:direct"]))
    cut = sum(r["harness"] == "" for r in jit if r["arm"] == "jit_static")
    # out of budget, units with unknown tokens
    assert f"| 100% | {cut} |" in table and "| 100% | 0 |" in table


def test_top_k_runs_the_best_seeds_on_score_and_the_cheapest_on_final(tmp_path):
    bench = make_bench(tmp_path, arms=("fixed",))
    bench.config.fixed_top = 1
    asyncio.run(bench.run(progress=False))
    chosen = bench.fixed_seeds()
    assert 1 <= len(chosen) <= 2
    fixed = {arm for arm, _, _ in bench.ledger.units if arm.startswith("fixed:")}
    assert fixed == {f"fixed:{n}" for n in chosen}
    screened = {arm for arm, _, _ in bench.ledger.units if arm.startswith("score:")}
    assert len(screened) == len(seeds_for([]))  # the suite carries no client functions: no `plain`


def test_the_tool_arms_writer_never_sees_a_final_task(tmp_path):
    writer = ScriptedModel(["```python\ndef solve(task):\n    return '7'\n```"], name="scripted-writer")
    bench = make_bench(tmp_path, arms=("jit_tools", "jit_tools_unverified"), per_split={"learn": 8})
    bench.drafts.model = writer
    asyncio.run(bench.run(progress=False))
    seen = "\n".join(m["content"] for call in writer.calls for m in call["messages"])
    assert writer.calls and "of learn" in seen
    assert not [t.prompt for t in bench.tasks("final") if t.prompt in seen]
    assert not [t.prompt for t in bench.tasks("score") if t.prompt in seen]  # score gates, unseen
    steps = (tmp_path / "out" / "tools-jit_tools.jsonl").read_text()
    assert '"kind": "tools"' in steps and "Code written ahead of time for `jit_tools`" in report(bench, "x")


@pytest.mark.slow
def test_the_adapter_arms_learn_from_learn_gate_on_score_and_never_train_on_final(tmp_path, monkeypatch):
    """A real LoRA of SmolLM2-135M trained on the warm bank's verified runs (the scripted solver's answers,
    under SmolLM2's name), gated on every score task; the fixed arm and the stream run with it, and the report
    says what training cost."""
    from jitagent.benchmark import adapted

    monkeypatch.setenv("JITAGENT_CACHE", str(tmp_path / "cache"))
    trained_on = []
    train = adapted.train_adapter

    def spy(bank, records, **kw):
        trained_on.extend(m["content"] for r in records for m in r["messages"])
        return train(bank, records, **kw)
    monkeypatch.setattr(adapted, "train_adapter", spy)
    bench = make_bench(tmp_path, arms=("fixed", *ADAPTER_ARMS), fixed_top=1, warm_top=1, repeats=1,
                       train=TrainConfig(rank=4, epochs=1, accumulate=1))
    asyncio.run(bench.run(progress=False))
    assert trained_on and not any("of final" in text for text in trained_on)  # learn's runs, never final
    arms = {arm for arm, _, _ in bench.ledger.units}
    [fixed_adapter] = [a for a in arms if a.startswith("fixed_adapter:")]
    assert "jit_examples_adapter" in arms and len(bench.ledger.rows(fixed_adapter)) == 4
    assert all(r["task_id"].startswith("final-") for r in bench.ledger.rows(fixed_adapter))
    text = report(bench, "jitagent bench --suite tiny")
    assert "Adapter `bench`" in text and "gate on 4 `score` tasks" in text and f"| {fixed_adapter} |" in text


def test_a_piped_bench_prints_a_line_per_unit(tmp_path, capsys):
    bench = make_bench(tmp_path, arms=("fixed", "jit_stream"), repeats=1)
    asyncio.run(bench.run())  # stderr is captured: not a terminal, so no bar but lines
    err = capsys.readouterr().err.splitlines()
    assert "[fixed:direct 1/4]" in err and "[fixed:direct 4/4]" in err and "[jit_stream 4/4]" in err


def test_a_fixed_only_bench_reports_no_stream_no_goals_and_the_command_once(tmp_path, recwarn):
    bench = make_bench(tmp_path, arms=("fixed", "oracle"), repeats=1)
    asyncio.run(bench.run(progress=False))
    text = report(bench, "jitagent bench --suite tiny")
    assert text.count("jitagent bench --suite tiny") == 1 and "Against the goals" not in text
    assert "| success (mean reward) | strict pass |" in text  # partial credit and full marks, side by side
    assert not (tmp_path / "out" / "stream.png").exists() and "![stream]" not in text
    assert not [w for w in recwarn if "No artists" in str(w.message)]
    # the scripted solver answers 7: every seed scores 0 on `add` tasks whose answers are 2 and 3
    assert "add → " in text and "(every seed scored 0 there)" in text.split("Oracle choice per type:")[1]


def test_a_fixed_unit_is_reused_only_with_the_same_runtime_model_and_budget(tmp_path):
    bench = make_bench(tmp_path, arms=("fixed",), repeats=1)
    asyncio.run(bench.run(progress=False))
    ledger = tmp_path / "out" / "results.jsonl"
    rows = [json.loads(x) for x in ledger.read_text().splitlines()]
    assert {(r["runtime"], r["model"], r["budget_s"]) for r in rows} == {
        (bench.context["runtime"], "scripted", 60.0)}
    rows[0]["runtime"] = "0123456789abcdef"  # as if run by other code
    ledger.write_text("".join(json.dumps(r) + "\n" for r in rows))
    again = make_bench(tmp_path, arms=("fixed",), repeats=1)
    asyncio.run(again.run(progress=False))
    rerun = [json.loads(x) for x in ledger.read_text().splitlines()][len(rows):]
    assert [(r["arm"], r["task_id"]) for r in rerun] == [(rows[0]["arm"], rows[0]["task_id"])]
    other_budget = make_bench(tmp_path, arms=("fixed",), repeats=1, budget_s=30.0)
    assert not other_budget.ledger.done(rows[1]["arm"], rows[1]["task_id"], 0, other_budget.context)


def test_the_adapters_training_data_leaves_out_every_score_and_final_task_in_its_bank(tmp_path, monkeypatch):
    """The guard itself (`held_out` in adapted._train): a final task's verified run put in the bank before
    training must not reach the adapter's records (in a bench none gets there; this puts one there)."""
    from rich.progress import Progress

    from harness_bank import HarnessBank
    from jitagent.benchmark import adapted
    from jitagent.harness.seeds import seed_bank
    from jitagent.improvement.recording import record_verified
    from jitagent.runtime.agent import Runtime

    bench = make_bench(tmp_path, arms=("fixed",), repeats=1)
    bench.bar = Progress(disable=True)
    bank = HarnessBank(tmp_path / "bank.db")
    seed_bank(bank)
    pot = bench.seeds["program_of_thought"]
    learn, final = (next(t for t in bench.tasks(split, every=True) if t.type == "echo")
                    for split in ("learn", "final"))
    for task in (learn, final):
        run = asyncio.run(Runtime(bench.solver).run(pot, task))
        assert run.reward == 1.0 and run.solution
        record_verified(bank, task, pot, run)
    taken = []
    monkeypatch.setattr(adapted, "train_adapter", lambda bank, records, **kw: taken.extend(records))
    asyncio.run(adapted._train(bench, bank, "guarded", 0))
    texts = [m["content"] for r in taken for m in r["messages"]]
    assert any(learn.prompt in t for t in texts) and not any(final.prompt in t for t in texts)
    bank.close()
