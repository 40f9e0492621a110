"""BFCL's multi-turn entries as episodes: each reply's calls run in the arm's own copy of the entry's
environment and their results go back into the conversation, until a reply makes no call, turn by turn;
the episode is judged by the wheel's checker and kept as one row. The wheel here is built in BFCL's layout
with an environment (a counter) and a checker of its own."""

import asyncio
import json
import sys
import zipfile
from types import SimpleNamespace

import pytest

EXECUTOR = '''
STATE = {}
def execute_multi_turn_func_call(calls, initial_config, classes, model_name, entry_id):
    key = (model_name, entry_id)
    STATE.setdefault(key, initial_config["Counter"]["start"])
    results = []
    for call in calls:
        STATE[key] += eval(call.replace("add(", "dict("))["n"]
        results.append(str(STATE[key]))
    return results, {}
'''
CHECKER = '''
SEEN = []
def multi_turn_checker(made, truth, entry, category, model):
    # BFCL's checker keeps its copies of the environments by model name: a name seen before would replay
    # the calls on copies another arm's calls already changed
    assert model not in SEEN, f"{model} judged twice"
    SEEN.append(model)
    ok = [[c for step in turn for c in step] for turn in made] == truth
    return {"valid": ok} if ok else {"valid": False, "error_message": f"made {made}"}
'''
ENTRY = {"id": "multi_turn_base_0", "involved_classes": ["Counter"],
         "initial_config": {"Counter": {"start": 1}},
         "question": [[{"role": "user", "content": "Add 2."}], [{"role": "user", "content": "Now add 3."}]]}
DOC = {"name": "add", "description": "Adds n to the counter.",
       "parameters": {"type": "dict", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}


@pytest.fixture
def multi_turn(bench_script):
    bench_script("bfcl_suite")
    bench_script("bfcl_score")
    yield bench_script("bfcl_multi_turn")
    for name in [m for m in sys.modules if m.startswith("bfcl_eval")]:
        del sys.modules[name]


@pytest.fixture
def wheel(tmp_path):
    path = tmp_path / "bfcl_eval-0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("bfcl_eval/data/BFCL_v4_multi_turn_base.json", json.dumps(ENTRY))
        z.writestr("bfcl_eval/data/possible_answer/BFCL_v4_multi_turn_base.json",
                   json.dumps({"id": ENTRY["id"], "ground_truth": [["add(n=2)"], ["add(n=3)"]]}))
        z.writestr("bfcl_eval/data/multi_turn_func_doc/counter.json", json.dumps(DOC))
        z.writestr("bfcl_eval/constants/executable_backend_config.py",
                   "MULTI_TURN_FUNC_DOC_FILE_MAPPING = {'Counter': 'counter.json'}\n")
        z.writestr("bfcl_eval/eval_checker/multi_turn_eval/multi_turn_utils.py", EXECUTOR)
        z.writestr("bfcl_eval/eval_checker/multi_turn_eval/multi_turn_checker.py", CHECKER)
    return path


class Scripted:
    """An arm whose replies are given: each a list of calls (none: a text reply), or calls made as the
    budget ran out (`late`)."""

    def __init__(self, module, replies, name="scripted"):
        self.module, self.replies, self.name, self.seen, self.reported = module, list(replies), name, [], None

    async def reply(self, entry, label, messages, order):
        self.seen.append((label, entry.task(label, messages).prompt, list(messages)))
        calls = self.replies.pop(0)
        late = isinstance(calls, tuple)
        row = {"route": "exploit", "budget_exhausted": late, "error": None, "wall_s": 1.0,
               **{k: None if late else 10 for k in self.module.TOKENS}}
        return self.module.Reply(list(calls), "" if calls else "Done.", row, f"run-{label}")

    async def scored(self, replies, reward, verdict):
        self.reported = ([r.run_id for r in replies], reward)


def add(n):
    return {"name": "add", "arguments": {"n": n}}


def test_each_call_runs_in_the_arms_environment_and_its_result_goes_back_turn_by_turn(multi_turn, wheel):
    envs = multi_turn.Environments(wheel)
    entry = multi_turn.read_entries(wheel, envs.doc_files)[0]
    assert [t.name for t in entry.tools] == ["add"] and entry.tools[0].parameters["type"] == "object"
    arm = Scripted(multi_turn, [[add(2)], [], [add(3)], []])
    episode = multi_turn.Episode(entry)
    asyncio.run(episode.run(arm, envs, order=0, limit=20))
    assert episode.made == [[["add(n=2)"]], [["add(n=3)"]]]
    assert [label for label, _, _ in arm.seen] == [f"{ENTRY['id']}/{s}" for s in ("0.0", "0.1", "1.0", "1.1")]
    second_reply = arm.seen[1][2]
    assert second_reply[-2] == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_0_0_0", "type": "function", "function": {"name": "add", "arguments": '{"n": 2}'}}]}
    assert second_reply[-1] == {"role": "tool", "tool_call_id": "call_0_0_0", "content": "3"}  # 1 + 2
    assert arm.seen[2][2][-2] == {"role": "assistant", "content": "Done."}  # a text reply ends its turn
    assert arm.seen[3][2][-1]["content"] == "6"  # the same environment in the next turn: 3 + 3
    # the task a door makes of the conversation so far: the calls and what they returned
    assert "called add" in arm.seen[1][1] and "add returned: 3" in arm.seen[1][1]
    assert episode.verdict("scripted", envs) == (True, "")
    row = episode.row("scripted", 0, True)
    assert (row["replies"], row["calls"], row["execution_tokens"], row["wall_s"]) == (4, 2, 40, 4.0)
    assert row["budget_exhausted"] is False and row["error"] is None and row["cut_off"] is False


def test_calls_made_as_the_budget_ran_out_run_and_end_the_turn_their_tokens_unknown(multi_turn, wheel):
    envs = multi_turn.Environments(wheel)
    entry = multi_turn.read_entries(wheel, envs.doc_files)[0]
    arm = Scripted(multi_turn, [(add(2),), [add(4)], []])
    episode = multi_turn.Episode(entry)
    asyncio.run(episode.run(arm, envs, order=0, limit=20))
    assert episode.made == [[["add(n=2)"]], [["add(n=4)"]]] and arm.seen[1][2][-2]["role"] == "tool"
    passed, why = episode.verdict("scripted", envs)
    assert not passed and why.startswith("made")
    row = episode.row("scripted", 0, passed)
    assert row["budget_exhausted"] is True and row["execution_tokens"] is None and row["reward"] == 0.0
    assert row["replies_out_of_budget"] == 1


def test_more_call_making_replies_in_a_turn_than_bfcls_limit_fails_the_whole_entry(multi_turn, wheel):
    envs = multi_turn.Environments(wheel)
    entry = multi_turn.read_entries(wheel, envs.doc_files)[0]
    arm = Scripted(multi_turn, [[add(2)], [add(0)], [add(0)]])  # the third call-making reply is one too many
    episode = multi_turn.Episode(entry)
    asyncio.run(episode.run(arm, envs, order=0, limit=2))
    assert episode.cut_off and len(episode.made) == 1 and arm.replies == []  # no second turn
    assert episode.verdict("scripted", envs) == (False, "force-terminated: more call-making replies in a "
                                                        "turn than BFCL's limit")


def test_every_arm_finishes_an_entry_its_reward_reported_for_each_run_and_a_resume_skips_it(multi_turn,
                                                                                            wheel, tmp_path):
    from jitagent.benchmark.ledger import Ledger

    envs = multi_turn.Environments(wheel)
    entries = multi_turn.read_entries(wheel, envs.doc_files)
    bench = SimpleNamespace(ledger=Ledger(tmp_path / "results.jsonl"), context={"budget_s": 30.0},
                            config=SimpleNamespace(out=tmp_path))
    right, wrong = (Scripted(multi_turn, [[add(2)], [], [add(3)], []], "bare"),
                    Scripted(multi_turn, [[add(3)], [], []], "jit_stream"))
    asyncio.run(multi_turn.MultiTurn(bench, envs, entries, limit=20).run([right, wrong]))
    assert right.reported == ([f"run-{ENTRY['id']}/{s}" for s in ("0.0", "0.1", "1.0", "1.1")], 1.0)
    assert wrong.reported[1] == 0.0 and len(wrong.reported[0]) == 3
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [(r["arm"], r["order"], r["reward"], r["budget_s"]) for r in rows] == [
        ("bare", 0, 1.0, 30.0), ("jit_stream", 0, 0.0, 30.0)]
    episodes = [json.loads(line) for line in (tmp_path / "trajectories.jsonl").read_text().splitlines()]
    assert episodes[1]["episode"] == [[["add(n=3)"]], []]
    resumed = Ledger(tmp_path / "results.jsonl")
    bench.ledger = resumed
    asyncio.run(multi_turn.MultiTurn(bench, envs, entries, limit=20).run([Scripted(multi_turn, [], "bare")]))
    assert len(resumed.rows("bare")) == 1  # done before: no reply asked for


def test_the_report_pairs_each_arm_with_the_bare_model_on_the_entries_both_finished(multi_turn, tmp_path):
    def row(arm, order, passed, tokens):
        return {"arm": arm, "task_id": f"multi_turn_base_{order}", "type": "multi_turn_base", "repeat": 0,
                "order": order, "reward": float(passed), "passed": passed, "error": None, "replies": 3,
                "cut_off": False, "budget_exhausted": tokens is None, "wall_s": 2.0,
                "replies_out_of_budget": int(tokens is None),
                "execution_tokens": tokens, "synthesis_tokens": 0, "repair_tokens": 0}
    rows = [row("bare", 0, False, 100), row("jit_stream", 0, True, 150), row("bare", 1, True, 100),
            row("jit_stream", 1, True, None), row("bare", 2, True, 100)]  # entry 2: the bare model's only
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = multi_turn.report(tmp_path)
    assert text.startswith("2 `multi_turn_base` entries finished by every arm")
    assert "| bare | 50.0 | – | 100 | 1.00 | 3.0 | 2.0 | 0 | 0 / 0 |" in text
    # tokens over the entries whose count is known; against the bare model's on entry 0 alone
    assert "| jit_stream | 100.0 | +50.0 (" in text
    assert "| 150 (1 of 2 known) | 1.50 | 3.0 | 2.0 | 0 | 1 / 1 |" in text
    del rows[0]["replies_out_of_budget"]  # a row from before replies were counted
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert "| 0 | 0 / – |" in multi_turn.report(tmp_path)


def test_the_ground_truth_replayed_through_the_episodes_is_judged_right(multi_turn, wheel):
    envs = multi_turn.Environments(wheel)
    entries = multi_turn.read_entries(wheel, envs.doc_files)
    assert asyncio.run(multi_turn.replayed(envs, entries)) == (1, [])
    truth = multi_turn.Truth()
    first, second = (asyncio.run(truth.reply(entries[0], f"{ENTRY['id']}/1.{s}", [], 0)) for s in (0, 1))
    assert first.calls == [add(3)] and second.calls == []  # a turn's calls in one reply, then none
