"""The client's own functions in a run: read from a reply however it writes the call, checked against their
schemas before they leave, a forced call decoded under them, and the run paused at a call."""

import asyncio

import pytest

from jitagent.harness.seeds import load_seeds
from jitagent.models.scripted import ScriptedModel
from jitagent.runtime import client_calls
from jitagent.runtime.agent import Runtime
from jitagent.runtime.parsing import ToolCall, parse_json_tool
from jitagent.tasks.conversation import called, returned, transcript
from jitagent.tasks.task import ClientTool, Task

TOTAL = ClientTool(name="get_order_total", description="The total of an order.",
                   parameters={"type": "object", "properties": {"order_id": {"type": "string"}},
                               "required": ["order_id"]})
ASK = "What is the total of order A-1001?"


@pytest.mark.parametrize("reply", [
    '{"tool": "get_order_total", "args": {"order_id": "A-1001"}}',
    '<tool_call>\n{"name": "get_order_total", "arguments": {"order_id": "A-1001"}}\n</tool_call>',
    'I will look it up.\n```json\n{"name": "get_order_total", '
    '"arguments": "{\\"order_id\\": \\"A-1001\\"}"}\n```',
    '[{"type": "function", "function": {"name": "get_order_total", "parameters": {"order_id": "A-1001"}}}]',
    'Thought: look it up\nAction: get_order_total\nAction Input: {"order_id": "A-1001"}',
    'We need {the id}.\n```python\nx = 1\n```\n'
    'So: {"tool": "get_order_total", "args": {"order_id": "A-1001"}}',
])
def test_a_call_is_read_however_the_reply_writes_it(reply):
    assert client_calls.read(reply, [TOTAL]) == [ToolCall("get_order_total", {"order_id": "A-1001"})]


AREA = ClientTool(name="area", description="A rectangle's area.", parameters={
    "type": "object", "required": ["width", "height"],
    "properties": {"width": {"type": "integer", "description": "Its width."}, "height": {"type": "integer"},
                   "unit": {"enum": ["m", "cm"], "default": "m"}, "sides": {"type": "array",
                                                                            "items": {"type": "number"}}}})


def test_functions_are_described_as_signatures_not_as_schemas_to_copy():
    """A small model shown `{"width": {"type": "integer"}}` wrote that back as the argument (BFCL traces)."""
    assert client_calls.describe([AREA]) == (
        '- area(width: integer, height: integer, unit: "m" | "cm" = "m" (optional), '
        "sides: array of number (optional)): A rectangle's area.\n    width: Its width.")
    assert '"type"' not in client_calls.describe([TOTAL, AREA])
    shaped = ClientTool(name="book", parameters={
        "$defs": {"Seat": {"enum": ["aisle", "window"]}}, "type": "object", "properties": {
            "seat": {"$ref": "#/$defs/Seat"},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "Said\n  twice."},
            "kind": {"const": "adult"}, "tags": {"type": ["array", "null"], "items": {"type": "string"}}}})
    assert client_calls.describe([shaped]) == (
        '- book(seat: "aisle" | "window" (optional), note: string | null (optional), '
        'kind: "adult" (optional), '
        "tags: array of string | null (optional))\n    note: Said twice.")


@pytest.mark.parametrize(("reply", "calls"), [
    ("```python\nresult = area(3, 4)\nprint(result)\n```", [ToolCall("area", {"width": 3, "height": 4})]),
    ("[area(width=3, height=4, unit='cm'), area(1, 2)]",
     [ToolCall("area", {"width": 3, "height": 4, "unit": "cm"}),
      ToolCall("area", {"width": 1, "height": 2})]),
    ("area(width=2, height=(1 + 1))", []),  # an expression: nothing to send
    ("I would call area(1, 2) here.", []),  # prose, not a line of calls
    ("def area(width=3, height=4):\n    return width * height\nprint(area(w, h))", []),
    ('```python\nprint("call area(1, 2)")  # or area(3, 4)\n```', []),  # in a string, in a comment
    ("print(area(area(1, 2), 3))", [ToolCall("area", {"width": 1, "height": 2})]),
    ("square_area(3, 4) or area(1, 2, 'm', [1], 5)", []),  # another name; more arguments than it has
    ("area(3, 4, width=5)", []),  # width given twice: Python itself refuses it
    ("area(1, 2, sides={1.0})", []), ("area(1, 2, sides=b'x')", []),  # no JSON value
    ("area(1, 2, sides=(1.5, 2))", [ToolCall("area", {"width": 1, "height": 2, "sides": [1.5, 2]})]),
    ("area(3, 4) returned 12.\nFinal answer: 12", []),  # the answer restates the call it came from
])
def test_calls_written_as_python_are_read_when_their_arguments_are_literals(reply, calls):
    assert client_calls.read(reply, [AREA]) == calls


def test_objects_that_name_no_client_function_are_no_call():
    assert client_calls.read('{"tool": "python", "args": {"code": "1"}}', [TOTAL]) == []
    assert client_calls.read("Final answer: 42", [TOTAL]) == []


@pytest.mark.parametrize(("reply", "calls"), [
    ('called area({"width": 3, "height": 4})', [ToolCall("area", {"width": 3, "height": 4})]),
    ('assistant: called area({"width": 3, "height": 4})\n\ntool: area returned: 12\n\n'
     'called area({"width": 12, "height": 1})', [ToolCall("area", {"width": 3, "height": 4})]),
    ('called volume({"width": 3})', []),  # no client function of that name
    ('called area({"width": 3, "height": 4})\narea returned: 12\nFinal answer: 12', []),
])
def test_a_call_in_the_notation_the_conversation_shows_calls_in_is_read_back(reply, calls):
    """A model shown earlier calls as `called name({...})` (tasks.conversation) answers the same way; what
    it writes after a result it made up itself acts on that result, and is not sent."""
    assert client_calls.read(reply, [AREA]) == calls


def test_a_call_the_conversation_already_shows_is_the_reply_restating_it():
    """The 0.5B answering from a result began its reply with the call it came from: read as a new call, the
    Agents SDK's run looped to its turn limit."""
    said = transcript([("user", "How large is a 3 by 4 room?"),
                       ("assistant", called("area", '{"width": 3, "height": 4}')),
                       ("tool", returned("area", "12"))])
    reply = 'called area({"height": 4, "width": 3})\n\nThe room is 12 square metres.'
    assert client_calls.read(reply, [AREA], said=said) == []
    shaped = 'called area({"type": "object", "properties": {"width": 3, "height": 4}})'
    assert client_calls.read(shaped, [AREA], said=said) == []  # the same call once repaired
    again = 'called area( {"width": 4, "height": 5} )'
    assert client_calls.read(again, [AREA], said=said) == [ToolCall("area", {"width": 4, "height": 5})]
    asked_again = transcript([("user", said), ("user", "And now?")])
    assert client_calls.read(reply, [AREA], said=asked_again) == [ToolCall("area", {"height": 4, "width": 3})]
    prose = 'called area({"width": 1, "height": 2}) as the old area returned: 2 was stale'
    assert client_calls.read(prose, [AREA]) == [ToolCall("area", {"width": 1, "height": 2})]


def test_arguments_written_in_the_schemas_shape_are_unwrapped():
    shaped = ToolCall("get_order_total", {"type": "object", "properties": {"order_id": "A-1001"}})
    assert client_calls.repaired(shaped, [TOTAL]) == ToolCall("get_order_total", {"order_id": "A-1001"})
    typed = ClientTool(name="f", parameters={"type": "object", "properties": {"type": {"type": "string"},
                                                                              "properties": {}}})
    own = ToolCall("f", {"type": "object", "properties": {}})
    assert client_calls.repaired(own, [typed]) == own  # the function's own arguments of those names


def test_arguments_a_strict_schema_forbids_are_dropped_before_the_check():
    strict = ClientTool(name="get_order_total", parameters=TOTAL.parameters | {"additionalProperties": False})
    made_up = ToolCall("get_order_total", {"order_id": "A-1001", "total_apples": 100})
    assert client_calls.repaired(made_up, [strict]) == ToolCall("get_order_total", {"order_id": "A-1001"})
    assert client_calls.repaired(made_up, [TOTAL]) == made_up  # extra arguments allowed: sent as given


def test_a_call_that_breaks_its_schema_says_where():
    assert client_calls.problem(ToolCall("get_order_total", {"order_id": 7}), [TOTAL]) == \
        "get_order_total: order_id: 7 is not of type 'string'"
    missing = client_calls.problem(ToolCall("get_order_total", {}), [TOTAL])
    assert "'order_id' is a required property" in missing
    assert client_calls.problem(ToolCall("get_order_total", "A-1001"), [TOTAL]).endswith("not a JSON object")
    assert client_calls.problem(ToolCall("get_order_total", {"order_id": "A"}), [TOTAL]) is None


def run(task, replies, seed="react"):
    model = ScriptedModel(replies)
    return asyncio.run(Runtime(model).run(load_seeds()[seed], task)), model


def test_the_run_pauses_at_a_valid_call_and_the_model_was_told_the_functions():
    task = Task(id="t", prompt=ASK, client_tools=[TOTAL])
    result, model = run(task, ['{"tool": "get_order_total", "args": {"order_id": "A-1001"}}'])
    assert result.client_calls == [{"name": "get_order_total", "arguments": {"order_id": "A-1001"}}]
    assert result.answer is None and result.error is None and result.stop is None
    assert "get_order_total" in model.calls[0]["messages"][0]["content"]  # the system message lists it


def test_a_call_that_breaks_its_schema_is_never_sent_and_the_model_may_answer_instead():
    task = Task(id="t", prompt=ASK, client_tools=[TOTAL])
    result, model = run(task, ['{"tool": "get_order_total", "args": {"order": 1001}}', "Final answer: 42.50"])
    assert result.client_calls == [] and result.answer == "42.50"
    told = model.calls[1]["messages"][-1]["content"]
    assert "not sent" in told and "'order_id' is a required property" in told


def test_a_task_without_client_tools_runs_as_before():
    result, model = run(Task(id="t", prompt="2+3?"), ["Final answer: 5"], seed="direct")
    assert result.answer == "5" and result.client_calls == []
    assert "functions of the user's" not in model.calls[0]["messages"][0]["content"]


def test_a_forced_call_is_decoded_under_the_tools_schema_without_the_harness_prefill():
    task = Task(id="t", prompt=ASK, client_tools=[TOTAL], tool_choice="get_order_total")
    result, model = run(task, ['{"tool": "get_order_total", "args": {"order_id": "A-1001"}}'],
                        seed="program_of_thought")
    call = model.calls[0]
    assert call["json_schema"] == client_calls.schema([TOTAL])
    assert call["messages"][-1]["role"] != "assistant"  # no ```python prefill under a JSON grammar
    assert result.client_calls[0]["name"] == "get_order_total"


def test_a_harness_prefill_does_not_open_a_reply_that_may_be_a_call():
    task = Task(id="t", prompt=ASK, client_tools=[TOTAL])
    result, model = run(task, ["```python\nprint(get_order_total('A-1001'))\n```"], seed="program_of_thought")
    assert model.calls[0]["messages"][-1]["role"] != "assistant"  # no ```python prefill
    assert result.client_calls == [{"name": "get_order_total", "arguments": {"order_id": "A-1001"}}]
    assert model.calls[0]["stop"] == ["\n```\n"]  # the end of a block it opens, not its opening fence
    plain, model = run(Task(id="t", prompt="2+3?"), ["print(5)\n```"], seed="program_of_thought")
    assert model.calls[0]["messages"][-1] == {"role": "assistant", "content": "```python\n"}


def test_a_task_refuses_tools_it_cannot_call():
    with pytest.raises(ValueError, match="not a JSON Schema at type"):
        ClientTool(name="f", parameters={"type": "objekt"})
    with pytest.raises(ValueError, match="points at none"):  # else the run, not the request, would fail
        ClientTool(name="f", parameters={"$ref": "#/$defs/missing"})
    with pytest.raises(ValueError, match="only this schema's own definitions"):  # nothing is fetched
        ClientTool(name="f", parameters={"$ref": "https://example.com/schema.json"})
    assert ClientTool(name="f", parameters={"$defs": {"A": {"type": "string"}}, "type": "object",
                                            "properties": {"a": {"$ref": "#/$defs/A"}}})
    with pytest.raises(ValueError, match="server tool"):
        Task(id="t", prompt="x", client_tools=[ClientTool(name="python")])
    with pytest.raises(ValueError, match="auto, required or a client tool's name"):
        Task(id="t", prompt="x", client_tools=[TOTAL], tool_choice="other")
    with pytest.raises(ValueError, match="needs client_tools"):
        Task(id="t", prompt="x", tool_choice="required")


def test_a_calls_verifier_judges_the_call_the_run_paused_at_and_keeps_it_as_a_solution():
    expected = '[{"get_order_total": {"order_id": ["A-1001"]}}]'
    task = Task(id="t", prompt=ASK, client_tools=[TOTAL], verifier={"kind": "calls", "expected": expected})
    result, _ = run(task, ['{"tool": "get_order_total", "args": {"order_id": "a-1001"}}'])
    assert result.passed and result.reward == 1.0
    assert result.solution == [{"role": "assistant",
                                 "content": '{"tool": "get_order_total", "args": {"order_id": "a-1001"}}'}]
    wrong, _ = run(task, ["Final answer: 42"])  # answered without the call the task needed
    assert not wrong.passed and wrong.verdict == "expected 1 call(s), the run made 0"


def test_deeply_nested_brackets_in_a_reply_are_no_call_not_a_crash():
    assert client_calls.read("[" * 5000 + "]" * 5000, [TOTAL]) == []
    assert client_calls.read("[" * 3000 + ' {"tool": "get_order_total", "args": {"order_id": "A"}}',
                             [TOTAL]) == [ToolCall("get_order_total", {"order_id": "A"})]
    assert parse_json_tool("[" * 3000 + "]" * 3000) is None  # the harness's own action reader too
    task = Task(id="t", prompt=ASK, client_tools=[TOTAL])
    result, _ = run(task, ["[" * 3000 + "]" * 3000, "Final answer: 1"], seed="react")
    assert result.error is None and result.answer == "1"


def test_a_run_paused_at_a_call_leaves_an_answers_verifier_unjudged():
    """The answer comes after the client's results: the pause is neither a pass nor a 0."""
    task = Task(id="t", prompt=ASK, client_tools=[TOTAL], verifier={"kind": "exact", "expected": "42.50"})
    result, _ = run(task, ['{"tool": "get_order_total", "args": {"order_id": "A-1001"}}'])
    assert result.client_calls and result.passed is None and result.reward is None
    assert "paused" in result.verdict


def test_when_one_call_of_a_reply_is_invalid_none_is_said_to_be_sent():
    task = Task(id="t", prompt=ASK, client_tools=[TOTAL])
    result, _ = run(task, ['[{"tool": "get_order_total", "args": {"order_id": "A"}}, '
                           '{"tool": "get_order_total", "args": {"order": 1}}]', "Final answer: 1"])
    said = [(e.text, e.ok) for e in result.trajectory.events if e.kind == "tool"]
    assert result.client_calls == [] and len(said) == 1  # not "sent to the client" for the valid one
    assert said[0][0].startswith("not sent: get_order_total: 'order_id'") and said[0][1] is False


def test_a_task_that_takes_one_call_a_reply_pauses_at_the_first():
    """parallel_tool_calls=false: the run records and sends the one call the client takes, not two."""
    two = ('[{"tool": "get_order_total", "args": {"order_id": "A"}}, '
           '{"tool": "get_order_total", "args": {"order_id": "B"}}]')
    both, _ = run(Task(id="t", prompt=ASK, client_tools=[TOTAL]), [two])
    one, _ = run(Task(id="t", prompt=ASK, client_tools=[TOTAL], parallel_calls=False), [two])
    assert len(both.client_calls) == 2
    assert one.client_calls == [{"name": "get_order_total", "arguments": {"order_id": "A"}}]


def test_the_model_is_told_it_may_call_several_at_once_only_where_the_client_takes_them():
    _, several = run(Task(id="t", prompt=ASK, client_tools=[TOTAL]), ["Final answer: 1"])
    assert "a JSON list of such objects" in several.calls[0]["messages"][0]["content"]
    forced = Task(id="t", prompt=ASK, client_tools=[TOTAL], tool_choice="required")  # a grammar of one call
    for task in (Task(id="t", prompt=ASK, client_tools=[TOTAL], parallel_calls=False), forced):
        _, one = run(task, ['{"tool": "get_order_total", "args": {"order_id": "A"}}'])
        system = one.calls[0]["messages"][0]["content"]
        assert "one call a reply" in system and "JSON list" not in system


def test_a_native_harness_hands_the_functions_to_the_models_own_template_not_its_system_prompt():
    native = load_seeds()["plain"]  # the model as its users serve it
    task = Task(id="t", prompt=ASK, client_tools=[TOTAL])
    call = '<tool_call>\n{"name": "get_order_total", "arguments": {"order_id": "A-1001"}}\n</tool_call>'
    model = ScriptedModel([call])
    result = asyncio.run(Runtime(model).run(native, task))
    assert result.client_calls == [{"name": "get_order_total", "arguments": {"order_id": "A-1001"}}]
    sent = model.calls[0]
    assert sent["tools"] == [{"type": "function", "function": TOTAL.model_dump(exclude_none=True)}]
    assert "get_order_total" not in sent["messages"][0]["content"]  # not described as well
    described, model = run(task, [call], seed="direct")
    assert model.calls[0]["tools"] is None and described.client_calls == result.client_calls
    plain, model = run(Task(id="t", prompt="2+3?"), ["Final answer: 5"], seed="direct")
    assert model.calls[0]["tools"] is None  # no functions of the client's: nothing to render
    forced = Task(id="t", prompt=ASK, client_tools=[TOTAL], tool_choice="get_order_total")
    model = ScriptedModel(['{"tool": "get_order_total", "args": {"order_id": "A-1001"}}'])
    asyncio.run(Runtime(model).run(native, forced))
    sent = model.calls[0]  # decoded under the schema, the functions described: never tools and a schema
    assert sent["tools"] is None and sent["json_schema"]
    assert "get_order_total" in sent["messages"][0]["content"]


def test_plain_answers_without_a_call_with_its_whole_reply_as_a_chats_user_reads_it():
    prose = "No function here gives the weather.\nAsk a weather service instead."
    result, _ = run(Task(id="t", prompt="What is the weather in Paris?", client_tools=[TOTAL]), [prose],
                    seed="plain")
    assert result.client_calls == [] and result.answer == prose
