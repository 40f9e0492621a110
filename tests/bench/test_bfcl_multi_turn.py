"""BFCL's multi-turn entries as episodes: each reply's calls run in the arm's own copy of the entry's
environment and their results go back into the conversation, until a reply makes no call, turn by turn;
the episode is judged by the wheel's checker and kept as one row. The wheel here is built in BFCL's layout
with an environment (a counter) and a checker of its own."""

import asyncio
import json
import sys
import zipfile

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
def multi_turn_checker(made, truth, entry, category, model):
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
    """An arm whose replies are given: each a list of calls (none: a text reply) or the budget running out."""

    name = "scripted"

    def __init__(self, module, replies):
        self.module, self.replies, self.seen, self.reported = module, list(replies), [], None

    async def reply(self, entry, label, messages, order):
        self.seen.append((label, entry.task(label, messages).prompt, list(messages)))
        calls = self.replies.pop(0)
        out_of_time = calls == "out of time"
        row = {"route": "exploit", "budget_exhausted": out_of_time, "error": None, "wall_s": 1.0,
               **{k: None if out_of_time else 10 for k in self.module.TOKENS}}
        return self.module.Reply([] if out_of_time else calls, "" if calls else "Done.", row, f"run-{label}")

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
    asyncio.run(episode.run(arm, envs, order=0, steps=5))
    assert episode.made == [[["add(n=2)"]], [["add(n=3)"]]]
    assert [label for label, _, _ in arm.seen] == [f"{ENTRY['id']}/{s}" for s in ("0.0", "0.1", "1.0", "1.1")]
    second_reply = arm.seen[1][2]
    assert second_reply[-2]["tool_calls"][0]["function"] == {"name": "add", "arguments": '{"n": 2}'}
    assert second_reply[-1] == {"role": "tool", "tool_call_id": "call_0_0_0", "content": "3"}  # 1 + 2
    assert arm.seen[3][2][-1]["content"] == "6"  # the same environment in the next turn: 3 + 3
    # the task a door makes of the conversation so far: the calls and what they returned
    assert "called add" in arm.seen[1][1] and "add returned: 3" in arm.seen[1][1]
    assert envs.verdict(entry, episode.made) == (True, "")
    row = episode.row("scripted", 0, True)
    assert (row["replies"], row["calls"], row["execution_tokens"], row["wall_s"]) == (4, 2, 40, 4.0)
    assert row["budget_exhausted"] is False and row["error"] is None


def test_a_reply_out_of_budget_ends_its_turn_and_its_unknown_tokens_stay_unknown(multi_turn, wheel, tmp_path):
    envs = multi_turn.Environments(wheel)
    entry = multi_turn.read_entries(wheel, envs.doc_files)[0]
    arm = Scripted(multi_turn, ["out of time", [add(3)], [add(1)]])  # the step cap ends the second turn
    episode = multi_turn.Episode(entry)
    asyncio.run(episode.run(arm, envs, order=0, steps=2))
    assert episode.made == [[], [["add(n=3)"], ["add(n=1)"]]]
    passed, why = envs.verdict(entry, episode.made)
    assert not passed and why.startswith("made")
    row = episode.row("scripted", 0, passed)
    assert row["budget_exhausted"] is True and row["execution_tokens"] is None and row["reward"] == 0.0


def test_the_report_pairs_the_jit_arm_with_the_bare_model_on_the_entries_both_finished(multi_turn, tmp_path):
    def row(arm, order, passed, tokens):
        return {"arm": arm, "task_id": f"multi_turn_base_{order}", "type": "multi_turn_base", "repeat": 0,
                "order": order, "reward": float(passed), "passed": passed, "error": None, "replies": 3,
                "budget_exhausted": False, "wall_s": 2.0, "execution_tokens": tokens, "synthesis_tokens": 0,
                "repair_tokens": 0}
    rows = [row("bare", 0, False, 100), row("jit_stream", 0, True, 150), row("bare", 1, True, 100),
            row("jit_stream", 1, True, 150), row("bare", 2, True, 100)]  # entry 2: the bare model's only
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = multi_turn.report(tmp_path)
    assert text.startswith("2 `multi_turn_base` entries finished by every arm")
    assert "| bare | 50.0 | – | 100 | 1.00 | 3.0 | 2.0 | 0 |" in text
    assert "| jit_stream | 100.0 | +50.0 (" in text and "| 150 | 1.50 |" in text
