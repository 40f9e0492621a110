"""Action kinds: how a model reply becomes a tool call or the answer."""

import pytest

from jitagent.harness.spec import ActionSpec
from jitagent.runtime.actions import Action
from jitagent.runtime.parsing import ToolCall
from jitagent.sandbox.tools import ToolResult


def action(kind: str, **spec) -> Action:
    return Action.kinds[kind](ActionSpec(kind=kind, **spec))


@pytest.mark.parametrize("kind, reply, call", [
    ("direct", "```python\nprint(1)\n```", None),
    ("codeact", "Run it:\n```python\nprint(1)\n```", ToolCall("python", {"code": "print(1)"})),
    ("react", "Thought: look\nAction: shell\nAction Input: ls", ToolCall("shell", "ls")),
    ("json_tool", '{"thought": "t", "tool": "list_dir", "args": {"path": "a"}}',
     ToolCall("list_dir", {"path": "a"})),
])
def test_each_kind_reads_its_own_call_format(kind, reply, call):
    assert action(kind).call(reply) == call


@pytest.mark.parametrize("kind, answers", [("direct", True), ("json_tool", True), ("react", False),
                                           ("codeact", False)])
def test_a_reply_without_a_call_is_the_answer_for_some_kinds_only(kind, answers):
    assert action(kind).answers("I am not sure yet.") is answers
    assert action(kind).answers("Final answer: 5")


def test_codeact_prefills_every_step_and_the_others_the_first_only():
    assert action("codeact").prefill("```python\n", step=2) == "```python\n"
    assert action("react").prefill("Thought:", step=0) == "Thought:"
    assert action("react").prefill("Thought:", step=1) == ""
    assert action("react").stop("") == ["Observation:"] and action("react").stop("```python\n") == ["```"]
    assert action("direct").stop("") is None
    assert action("codeact").stop("```python\n", opened=False) == ["\n```\n"]  # the reply may be a call


def test_samples_are_drawn_warm_and_a_failed_call_warms_the_next_step():
    assert action("react").temperature(tool_failed=False) == 0.0
    assert action("react").temperature(tool_failed=True) == 0.6
    assert action("react", samples=3).temperature(tool_failed=False) == 0.7
    assert action("react", samples=3, temperature=0.2).temperature(tool_failed=False) == 0.2


def test_json_tool_decodes_under_one_schema_branch_per_tool():
    schema = action("json_tool").schema(["python", "shell"])
    tools = [branch["properties"]["tool"] for branch in schema["anyOf"]]
    assert tools == [{"const": "python"}, {"const": "shell"}]
    assert action("react").schema(["python"]) is None


def test_answer_from_stdout_is_the_last_printed_line_of_a_program_that_ran():
    codeact = action("codeact", answer_from="stdout")
    python = ToolCall("python", {"code": "..."})
    assert codeact.stdout_answer(python, ToolResult("x", ok=True, stdout="step\n 42 \n")) == "42"
    assert codeact.stdout_answer(python, ToolResult("x", ok=False, stdout="42\n")) is None
    assert action("codeact").stdout_answer(python, ToolResult("x", ok=True, stdout="42\n")) is None
