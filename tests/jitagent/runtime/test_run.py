"""The run's own limits and code: what stops a run is a typed field of its result."""

from jitagent.harness.seeds import load_seeds
from jitagent.runtime.events import Stop
from jitagent.tasks.task import Task

ADD = Task(id="t1", prompt="What is 2+3?", verifier={"kind": "numeric", "expected": 5})


def test_a_failing_code_section_is_a_typed_stage_failure(solve, seed_with):
    code = {"stage": "planning", "source": "def guidance(task, history):\n    raise KeyError\n"}
    spec = seed_with("direct", code=code)
    result, _ = solve(spec, ADD, ["Final answer: 5"])
    assert result.stop.cause == "stage_failure" and result.stop.text.startswith("StageFailure: code section")
    assert result.error is None and not result.passed


def test_the_token_budget_is_a_typed_stop(solve, seed_with):
    spec = seed_with("codeact", limits={"max_tokens": 20})
    result, _ = solve(spec, ADD, ["```python\nprint('a b c d e f g h i j k l')\n```"])
    assert result.stop == Stop(cause="budget",
                               text="BudgetExceeded: token budget exhausted (limits.max_tokens = 20)")
    assert result.error is None and not result.interrupted


def test_a_run_that_ends_normally_has_no_stop(solve):
    result, _ = solve(load_seeds()["direct"], ADD, ["Final answer: 5"])
    assert result.stop is None and result.passed


def test_tool_calls_past_the_limit_are_refused_to_the_model(solve, seed_with):
    spec = seed_with("codeact", limits={"max_tool_calls": 1}, memory={"kind": "full"})
    result, _ = solve(spec, ADD, ["```python\nprint(1)\n```", "```python\nprint(2)\n```", "Final answer: 5"])
    tools = [(e.ok, e.text) for e in result.trajectory.events if e.kind == "tool"]
    assert tools == [(True, "1"), (False, "error: tool-call limit (1) reached; give the final answer")]
    assert result.passed


def test_the_harness_timeout_is_a_typed_stop(solve, seed_with):
    spec = seed_with("codeact", limits={"timeout_s": 1})
    result, _ = solve(spec, ADD, ["```python\nimport time\ntime.sleep(30)\n```"])
    assert result.stop.cause == "timeout" and result.stop.text == "harness timeout: limits.timeout_s = 1.0"
    assert result.error is None and not result.interrupted
