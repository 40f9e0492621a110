"""The agent loop with a scripted model (unit tests: no real model runs here)."""

import asyncio

from jitagent.harness.seeds import load_seeds
from jitagent.harness.spec import parse_spec
from jitagent.models.scripted import ScriptedModel
from jitagent.runtime.agent import Runtime
from jitagent.runtime.events import RunResult, Step
from jitagent.tasks.task import Task
from jitagent.tasks.verifiers import Verdict

ADD = Task(id="t1", prompt="What is 2+3?", verifier={"kind": "numeric", "expected": 5})


def run(spec, task, replies):
    """The run's result, its steps and the model; the stream is the steps, then the verdict, the result."""
    model = ScriptedModel(replies)

    async def go():
        return [event async for event in Runtime(model).stream(spec, task)]
    *steps, verdict, result = asyncio.run(go())
    assert all(isinstance(e, Step) for e in steps)
    assert isinstance(verdict, Verdict) and isinstance(result, RunResult)
    assert (verdict.passed, verdict.detail) == (result.passed, result.verdict)
    return result, steps, model


def variant(name: str, **changes):
    data = load_seeds()[name].model_dump(mode="json")
    for path, value in changes.items():
        section, _, key = path.partition("__")
        if key:
            data[section][key] = value
        else:
            data[section] = value
    return parse_spec(data)


def test_direct_with_few_shot_and_cost_counted():
    result, events, model = run(load_seeds()["direct"], ADD, ["2 plus 3 is 5.\nFinal answer: 5"])
    assert result.passed and result.reward == 1.0 and result.answer == "5"
    sent = model.calls[0]["messages"]
    assert sent[1]["role"] == "user" and "meeting" in sent[1]["content"]  # the few-shot example
    assert result.cost.prompt_tokens > 0 and result.cost.completion_tokens == 8


def test_program_of_thought_prefills_and_answers_from_stdout():
    result, events, model = run(load_seeds()["program_of_thought"], ADD, ["print(2 + 3)\n"])
    assert model.calls[0]["messages"][-1] == {"role": "assistant", "content": "```python\n"}
    assert result.passed and result.answer == "5"
    assert any(e.kind == "tool" and e.tool == "python" for e in events)


def test_codeact_sees_the_observation_then_answers():
    replies = ["```python\nprint(sum(range(4)))\n```", "Final answer: 6"]
    task = Task(id="t", prompt="sum 0..3", verifier={"kind": "numeric", "expected": 6})
    result, _, model = run(load_seeds()["codeact"], task, replies)
    assert result.passed
    assert "Observation:\n6" in model.calls[1]["messages"][-1]["content"]


def test_a_long_observation_goes_back_as_its_head_and_tail_with_what_was_cut():
    from jitagent.runtime.clipping import OBSERVATION_CHARS

    replies = ["```python\nprint('start', *range(1000), 'end')\n```", "Final answer: 6"]
    result, events, model = run(load_seeds()["codeact"], ADD, replies)
    printed = next(e.text for e in events if e.kind == "tool")
    told = model.calls[1]["messages"][-1]["content"]
    assert told.startswith("Observation:\nstart 0 1 2") and told.endswith("998 999 end")
    assert f"[... {len(printed) - OBSERVATION_CHARS:,} characters cut ...]" in told
    assert len(told) < OBSERVATION_CHARS + 100 < len(printed)  # the trajectory keeps it whole


def test_react_tool_then_final_answer_on_workspace_file():
    task = Task(id="w", prompt="How many lines?", files={"a.txt": "1\n2\n3\n"},
                verifier={"kind": "numeric", "expected": 3})
    replies = ["Thought: count\nAction: shell\nAction Input: wc -l < a.txt",
               "Thought: done\nAction: final_answer\nAction Input: 3"]
    result, events, _ = run(load_seeds()["react"], task, replies)
    tool = next(e for e in events if e.kind == "tool")
    assert tool.tool == "shell" and tool.text.strip() == "3"
    assert result.passed


def test_json_tool_calls_are_schema_constrained():
    replies = ['{"thought": "write", "tool": "write_file", "args": {"path": "out.txt", "content": "42"}}',
               '{"thought": "done", "tool": "final_answer", "args": {"answer": "ok"}}']
    task = Task(id="f", prompt="write 42 to out.txt",
                verifier={"kind": "shell_check", "command": "grep -qx 42 out.txt"})
    result, _, model = run(load_seeds()["plan_and_execute"], task, ["1. write the file"] + replies)
    assert result.passed
    assert any(c["json_schema"] and "anyOf" in c["json_schema"] for c in model.calls)


def test_samples_majority_vote():
    replies = iter(["Final answer: 5", "Final answer: 4", "Final answer: 5"])
    result, events, _ = run(load_seeds()["self_consistency"], ADD, lambda m: next(replies))
    assert result.answer == "5" and sum(e.kind == "sample" for e in events) == 3


def test_tree_of_thoughts_judge_picks_a_candidate():
    replies = iter(["Final answer: 4", "Final answer: 5", "Final answer: 6", "2"])
    result, _, _ = run(load_seeds()["tree_of_thoughts"], ADD, lambda m: next(replies))
    assert result.answer == "5"


def test_reflect_after_failed_self_check_retries_with_the_lesson():
    replies = iter(["Final answer: 4", "WRONG: 2+3 is not 4", "Add carefully.", "Final answer: 5", "CORRECT"])
    result, events, model = run(load_seeds()["self_refine"], ADD, lambda m: next(replies))
    assert result.answer == "5" and result.passed
    assert any(e.kind == "reflection" and "carefully" in e.text for e in events)
    assert "Add carefully." in model.calls[3]["messages"][0]["content"]


def test_run_tests_verification_feeds_failures_back():
    task = Task(id="p", prompt="Write double(x).", public_tests="assert double(3) == 6",
                verifier={"kind": "python_tests", "tests": "assert double(3) == 6"})
    replies = iter(["```python\ndef double(x):\n    return x + 2\n```", "Final answer: done",
                    "Fix the arithmetic.",
                    "```python\ndef double(x):\n    return x * 2\n```", "Final answer: done"])
    result, events, _ = run(load_seeds()["test_driven"], task, lambda m: next(replies))
    assert result.passed, result.verdict
    assert any(e.kind == "reflection" for e in events)


def test_decompose_respects_the_depth_limit():
    spec = load_seeds()["recursive"]  # max_depth 2, 2 subtasks per level

    def reply(messages):
        system = messages[0]["content"]
        if system.startswith("Split"):
            return "1. part one\n2. part two\n3. part three"
        return "print(5)"
    result, events, _ = run(spec, ADD, reply)
    plans = [e for e in events if e.kind == "plan"]
    subtasks = [e for e in events if e.kind == "subtask"]
    assert max(e.depth for e in subtasks) == 2 and {e.depth for e in plans} == {0, 1}
    assert len([e for e in subtasks if e.depth == 1]) == 2  # capped at max_subtasks
    assert result.passed


def test_a_sub_agents_long_answer_reaches_its_parent_and_siblings_clipped():
    from jitagent.runtime.clipping import ANSWER_CHARS

    spec = load_seeds()["recursive"]

    def reply(messages):
        if messages[0]["content"].startswith("Split"):
            return "1. list the primes\n2. add them" if "Known" not in messages[-1]["content"] else "none"
        return "print(*range(1500))"  # answer_from stdout: ~6,000 characters
    result, events, model = run(spec, ADD, reply)
    asked = [c["messages"][-2]["content"] for c in model.calls]  # the last message is the prefill
    later = [text for text in asked if "Known so far" in text]
    assert later and all(len(text) < 4 * ANSWER_CHARS for text in later)
    assert all("characters cut ...]" in text for text in later)
    parent = asked[-1]
    assert "Sub-questions already answered" in parent and len(parent) < 6 * ANSWER_CHARS


def test_a_decomposition_that_is_code_has_no_sub_questions():
    # a 0.5B model asked to split a coding task wrote the solution; its "```python" line became a
    # sub-question, whose answer ("... capital of France ... Paris") became the task's answer
    def reply(messages):
        if messages[0]["content"].startswith("Split"):
            return "```python\nprint(2 + 3)\n```"
        return "Final answer: 5"
    result, events, model = run(load_seeds()["least_to_most"], ADD, reply)
    assert not [e for e in events if e.kind == "subtask"] and len(model.calls) == 2
    assert "Sub-questions" not in model.calls[1]["messages"][-1]["content"]
    assert result.passed


def test_summary_memory_folds_old_turns():
    spec = variant("codeact", memory={"kind": "summary", "every": 2, "budget": 32}, limits__max_steps=5)
    replies = (["```python\nprint(1)\n```"] * 2 + ["SUMMARY: printed 1 twice"]
               + ["```python\nprint(5)\n```", "Final answer: 5"])
    it = iter(replies)
    result, _, model = run(spec, ADD, lambda m: next(it))
    assert result.passed
    assert any("Summary of earlier steps" in m["content"] for c in model.calls for m in c["messages"])
    assert any(e.kind == "memory" for e in result.trajectory.events)


def test_window_memory_keeps_the_task_and_recent_turns():
    spec = variant("codeact", memory={"kind": "window", "window": 2}, limits__max_steps=4)
    it = iter(["```python\nprint(1)\n```", "```python\nprint(2)\n```", "```python\nprint(3)\n```",
               "Final answer: 5"])
    _, _, model = run(spec, ADD, lambda m: next(it))
    last = model.calls[-1]["messages"]
    assert "What is 2+3?" in last[-3]["content"] and len([m for m in last if m["role"] != "system"]) <= 3 + 4


def test_code_section_answer_stage_runs_in_the_sandbox():
    data = load_seeds()["direct"].model_dump(mode="json")
    data["code"] = {"stage": "answer",
                    "source": "def extract_answer(text):\n    return text.split('=')[-1].strip()\n"}
    result, _, _ = run(parse_spec(data), ADD, ["2+3 = 5"])
    assert result.answer == "5" and result.passed


def test_code_section_that_raises_fails_the_run_not_the_host():
    data = load_seeds()["direct"].model_dump(mode="json")
    data["code"] = {"stage": "planning",
                    "source": "def guidance(task, history):\n    raise RuntimeError('boom')\n"}
    result, events, _ = run(parse_spec(data), ADD, ["Final answer: 5"])
    assert not result.passed and result.error is None
    assert any("boom" in e.text for e in events if e.kind == "verify")


def test_an_answer_stage_that_fails_keeps_the_harness_answer_and_says_why():
    data = load_seeds()["direct"].model_dump(mode="json")
    data["code"] = {"stage": "answer", "source": "def extract_answer(text):\n    raise KeyError('boom')\n"}
    result, events, _ = run(parse_spec(data), ADD, ["Final answer: 5"])
    assert result.passed and result.answer == "5" and result.stop is None
    assert [(e.tool, e.ok) for e in events if e.kind == "tool"] == [("answer", False)]
    assert "boom" in events[-1].text


def solving(source: str):
    """The direct seed carrying a `solve` code section (as a tool-maker writes for a cluster)."""
    data = load_seeds()["direct"].model_dump(mode="json")
    data["code"] = [{"stage": "solve", "source": source},
                    {"stage": "answer", "source": "def extract_answer(text):\n    return text.strip('.')\n"}]
    return parse_spec(data)


def test_a_solve_stage_answers_without_the_model():
    spec = solving("import re\ndef solve(task):\n    a, b = map(int, re.findall(r'\\d+', task))\n"
                   "    return str(a + b)\n")
    result, events, model = run(spec, ADD, ["Final answer: 7"])
    assert result.passed and result.answer == "5" and not model.calls and result.cost.tokens == 0
    assert [(e.kind, e.tool, e.text) for e in events] == [("tool", "solve", "5")]


def test_where_the_solve_stage_gives_nothing_or_fails_the_loop_answers():
    for source in ("def solve(task):\n    return None\n", "def solve(task):\n    return 1 / 0\n"):
        result, events, model = run(solving(source), ADD, ["Final answer: 5."])
        assert result.passed and result.answer == "5" and len(model.calls) == 1
        assert [(e.tool, e.ok) for e in events if e.kind == "tool"] == [("solve", False), ("answer", True)]


def test_token_budget_stops_the_run():
    spec = variant("codeact",
                   limits={"max_steps": 10, "max_tool_calls": 10, "max_tokens": 20, "timeout_s": 30})
    result, events, _ = run(spec, ADD, ["```python\nprint('a b c d e f g h i j k l')\n```"])
    assert not result.passed and any("budget" in e.text for e in events if e.kind == "verify")


def test_crashing_verifier_scores_zero_and_says_why():
    task = Task(id="r", prompt="x", verifier={"kind": "regex", "pattern": "("})
    result, _, _ = run(load_seeds()["direct"], task, ["Final answer: x"])
    assert result.reward == 0.0 and "verifier crashed" in result.verdict


def test_harness_timeout_is_a_genuine_outcome_but_an_outside_deadline_is_not():
    import time

    spec = variant("codeact", limits={"max_steps": 4, "max_tool_calls": 4, "max_tokens": 900, "timeout_s": 1})
    result, events, _ = run(spec, ADD, ["```python\nimport time\ntime.sleep(30)\n```"])
    assert result.error is None and not result.interrupted
    assert any("harness timeout" in e.text for e in events if e.kind == "verify")
    assert result.cost.wall_s < 10
    model = ScriptedModel(["```python\nimport time\ntime.sleep(30)\n```"])
    outside = asyncio.run(Runtime(model).run(load_seeds()["codeact"], ADD, deadline=time.monotonic() + 1))
    assert outside.interrupted and outside.error is not None and outside.error.startswith("stopped")


def test_a_model_call_cut_by_the_deadline_is_counted_in_the_runs_cost():
    import time

    from jitagent.common.usage import Usage
    from jitagent.models.base import Cancelled

    class CutShort:
        name = "cut"

        async def complete(self, messages, **kw):
            raise Cancelled("cut after 40 of the prompt's 90 tokens", Usage(40, 0))

    result = asyncio.run(Runtime(CutShort()).run(load_seeds()["direct"], ADD, deadline=time.monotonic() + 60))
    assert result.interrupted and (result.cost.prompt_tokens, result.cost.completion_tokens) == (40, 0)
