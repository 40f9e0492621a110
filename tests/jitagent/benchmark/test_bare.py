"""The bare arm reads a reply's calls as serving stacks read them, and refuses to run outside a stream."""

import asyncio

import pytest

from jitagent.benchmark.bare import parsed_calls
from jitagent.benchmark.runner import Bench, BenchConfig
from jitagent.models.scripted import ScriptedModel
from jitagent.tasks.task import ClientTool

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
