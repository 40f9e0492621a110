"""The bare arm reads a reply's calls as serving stacks read them, and refuses to run outside a stream."""

import asyncio

import pytest

from jitagent.benchmark.bare import BareModel, parsed_calls
from jitagent.benchmark.runner import Bench, BenchConfig
from jitagent.models.scripted import ScriptedModel
from jitagent.tasks.task import ClientTool, Task

CALL = {"name": "area", "arguments": {"base": 10}}
TOOLS = [ClientTool(name="area", parameters={"type": "object", "properties": {"base": {"type": "number"}}})]


@pytest.mark.parametrize("reply", [
    '<tool_call>\n{"name": "area", "arguments": {"base": 10}}\n</tool_call>',
    '<tool_call>{"name": "area", "arguments": "{\\"base\\": 10}"}',  # cut off before the closing tag
    'Sure:\n```json\n{"name": "area", "arguments": {"base": 10}}\n```',
    '{"name": "area", "parameters": {"base": 10}}',
    'Action: area\nAction Input: {"base": 10}',
])
def test_one_call_in_each_way_a_model_writes_it(reply):
    assert parsed_calls(reply, TOOLS) == [CALL]


def test_parallel_calls_in_a_list_one_after_another_or_in_several_blocks():
    two = [CALL, {"name": "area", "arguments": {"base": 3}}]
    assert parsed_calls('[{"name": "area", "arguments": {"base": 10}}, '
                        '{"name": "area", "arguments": {"base": 3}}]', TOOLS) == two
    assert parsed_calls('```json\n{"name": "area", "arguments": {"base": 10}}\n'
                        '{"name": "area", "arguments": {"base": 3}}\n```', TOOLS) == two
    assert parsed_calls('<tool_call>{"name": "area", "arguments": {"base": 10}}</tool_call>\n'
                        '<tool_call>{"name": "area", "arguments": {"base": 3}}</tool_call>', TOOLS) == two


@pytest.mark.parametrize("reply", ["The area is 25.", '{"area": 25}', '```python\nprint(25)\n```',
                                   '{"name": "volume", "arguments": {"base": 10}}', ""])
def test_a_reply_that_calls_none_of_the_tools(reply):
    assert parsed_calls(reply, TOOLS) == []


def test_the_bare_arm_runs_only_in_a_stream(tmp_path):
    bench = Bench(BenchConfig(suite="starter", out=tmp_path, arms=("bare",)), ScriptedModel([]),
                  ScriptedModel([]))
    with pytest.raises(ValueError, match="'bare' runs in a stream"):
        asyncio.run(bench.run(progress=False))


class FakeLlama:
    """llama-cpp-python's chat completion as the arm calls it: what it was asked, and a reply or a failure."""

    stopping = None

    def __init__(self, reply: str | Exception):
        self.reply, self.asked = reply, []

    def create_chat_completion(self, **request):
        self.asked.append(request)
        if isinstance(self.reply, Exception):
            raise self.reply
        return {"choices": [{"message": {"role": "assistant", "content": self.reply}}],
                "usage": {"prompt_tokens": 250, "completion_tokens": 40}}


def bare(reply) -> tuple[BareModel, FakeLlama]:
    model, llm = BareModel("unused.gguf", 4096), FakeLlama(reply)
    model._llm = llm  # loaded
    return model, llm


def test_the_bare_model_gets_the_tools_and_its_reply_is_a_run_with_its_calls_and_tokens():
    model, llm = bare('```json\n{"name": "area", "arguments": {"base": 10}}\n```')
    run = asyncio.run(model.run(Task(id="t", prompt="Area?", client_tools=TOOLS), budget_s=30))
    assert llm.asked[0]["tools"][0] == {"type": "function", "function": TOOLS[0].model_dump()}
    assert llm.asked[0]["messages"] == [{"role": "user", "content": "Area?"}]
    assert run.client_calls == [CALL] and run.answer is None and run.error is None
    assert (run.cost.prompt_tokens, run.cost.completion_tokens) == (250, 40) and run.reward is None
    text, _ = bare("The area is 25.")
    answered = asyncio.run(text.run(Task(id="t", prompt="Area?"), budget_s=30))
    assert answered.answer == "The area is 25." and answered.client_calls == []


def test_a_conversation_a_client_holds_goes_to_the_bare_model_as_its_messages():
    model, llm = bare("The area is 100.")
    conversation = [{"role": "user", "content": "Area?"},
                    {"role": "assistant", "content": None, "tool_calls": [{"id": "c0", "type": "function",
                                                                          "function": CALL}]},
                    {"role": "tool", "tool_call_id": "c0", "content": "100"}]
    run = asyncio.run(model.run(Task(id="t", prompt="Area?", client_tools=TOOLS), budget_s=30,
                                messages=conversation))
    assert llm.asked[0]["messages"] == conversation and run.answer == "The area is 100."


def test_a_failure_of_the_bare_model_is_the_units_error_with_its_tokens_unknown():
    model, _ = bare(ValueError("Requested tokens (5000) exceed context window of 4096"))
    run = asyncio.run(model.run(Task(id="t", prompt="Area?", client_tools=TOOLS), budget_s=30))
    assert run.error.startswith("ValueError: Requested tokens") and run.cost.prompt_tokens is None
    assert run.answer is None and run.client_calls == [] and not run.interrupted
