"""Function calling through the OpenAI door of a real server on a real loopback port: the client's tools
reach the harness, a call comes back as `tool_calls` (whole or streamed), the conversation goes on from
the tool's result, `tool_choice` is honoured and a malformed tool is refused naming its field. Scripted
model (protocol tests); an Agents SDK agent with a function tool, on the real embedded model (slow)."""

import asyncio
import json

import httpx
import openai
import pytest

from jitagent.doors.openai_http import ChatRequest, Message, OpenAIDoor, conversation_text

from .conftest import running
from .test_openai_api import client_for

TOOL = {"type": "function", "function": {
    "name": "get_order_total", "description": "The total of an order, in dollars.",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                   "required": ["order_id"]}}}
ASK = [{"role": "user", "content": "What is the total of order A-1001?"}]


def test_a_required_call_comes_back_as_tool_calls_and_none_sends_no_tools_scripted(make_config):
    async def main():
        async with running(make_config(openai_port=0)) as (server, _):
            client = client_for(server)
            called = await client.chat.completions.create(model="jitagent", messages=ASK, tools=[TOOL],
                                                          tool_choice="required")
            choice = called.choices[0]
            assert choice.finish_reason == "tool_calls" and choice.message.content is None
            call = choice.message.tool_calls[0]
            assert call.function.name == "get_order_total" and call.id.startswith("call_")
            assert isinstance(json.loads(call.function.arguments)["order_id"], str)  # held to its schema
            named = await client.chat.completions.create(
                model="jitagent", messages=ASK, tools=[TOOL],
                tool_choice={"type": "function", "function": {"name": "get_order_total"}})
            assert named.choices[0].message.tool_calls[0].function.name == "get_order_total"
            expected = '[{"get_order_total": {"order_id": ["x"]}}]'  # the scripted call's argument
            verified = await client.chat.completions.create(
                model="jitagent", messages=ASK, tools=[TOOL], tool_choice="required",
                extra_body={"jitagent": {"verifier": {"kind": "calls", "expected": expected}}})
            assert verified.model_extra["jitagent"]["reward"] == 1.0  # verified on the call it made
            answered = await client.chat.completions.create(model="jitagent", messages=ASK, tools=[TOOL],
                                                            tool_choice="none")
            assert answered.choices[0].finish_reason == "stop" and not answered.choices[0].message.tool_calls
            assert answered.choices[0].message.content == "0"  # what the scripted model answers
    asyncio.run(main())


def test_parallel_tool_calls_false_reaches_the_run_not_only_the_reply():
    """The run itself makes one call a reply, so what it records, is verified on and is shown later is
    what the client got."""
    for parallel in (True, False):
        chat = ChatRequest(model="jitagent", messages=ASK, tools=[TOOL], parallel_tool_calls=parallel)
        assert OpenAIDoor._task(chat).parallel_calls is parallel


def test_a_streamed_call_reads_as_openai_streams_one_scripted(make_config):
    async def main():
        async with running(make_config(openai_port=0)) as (server, _):
            stream = await client_for(server).chat.completions.create(
                model="jitagent", messages=ASK, tools=[TOOL], tool_choice="required", stream=True)
            chunks = [c async for c in stream if c.choices]
            deltas = [d for c in chunks for d in c.choices[0].delta.tool_calls or []]
            assert [d.index for d in deltas] == [0] and deltas[0].function.name == "get_order_total"
            assert chunks[-1].choices[0].finish_reason == "tool_calls"
    asyncio.run(main())


def test_a_malformed_tool_or_choice_is_refused_naming_the_field_and_nothing_runs_scripted(make_config):
    async def main():
        async with running(make_config(openai_port=0)) as (server, _):
            client = client_for(server)
            broken = {"type": "function", "function": {"name": "f", "parameters": {"type": "objekt"}}}
            with pytest.raises(openai.BadRequestError) as refused:
                await client.chat.completions.create(model="jitagent", messages=ASK, tools=[broken])
            assert refused.value.body["param"] == "tools[0].function.parameters"
            assert "not a JSON Schema at type" in refused.value.message
            with pytest.raises(openai.BadRequestError) as refused:
                await client.chat.completions.create(model="jitagent", messages=ASK, tools=[TOOL],
                                                     tool_choice={"type": "function",
                                                                  "function": {"name": "other"}})
            assert refused.value.body["param"] == "tool_choice"
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.openai_port}") as http:
                named = await http.post("/v1/chat/completions", json={
                    "model": "jitagent", "messages": ASK, "tools": [{"type": "function",
                                                                   "function": {"name": "a b"}}]})
                clash = await http.post("/v1/chat/completions", json={
                    "model": "jitagent", "messages": ASK, "tools": [TOOL, TOOL]})
            assert named.status_code == 400 and named.json()["error"]["param"] == "tools[0].function.name"
            assert clash.status_code == 400 and clash.json()["error"]["param"] == "tools[1].function.name"
            assert server.solving.pipeline.bank.store.query("SELECT COUNT(*) FROM runs")[0][0] == 0
    asyncio.run(main())


def test_the_conversation_goes_on_from_the_tools_result():
    messages = [Message(**m) for m in ASK + [
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": "get_order_total", "arguments": '{"order_id": "A-1001"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "42.50"}]]
    assert conversation_text(messages) == (
        "user: What is the total of order A-1001?\n\n"
        'assistant: called get_order_total({"order_id": "A-1001"})\n\n'
        "tool: get_order_total returned: 42.50")


@pytest.mark.slow
def test_an_agents_sdk_agent_calls_its_function_tool_and_answers_from_its_result_with_embedded_models(
        make_config):
    """The OpenAI Agents SDK, unchanged, pointed at a real `serve` with the embedded model: the agent's own
    function tool is called through the door (the run pauses at the call, the SDK runs the tool and sends
    the result back, `tool_choice` reset to auto as the SDK does after a call) and the final answer is the
    tool's result. `required`: on `auto` the 0.5B under the direct seed may answer without calling — which
    harness calls well is the bank's to learn per cluster, not this test's."""
    from agents import (
        Agent,
        ModelSettings,
        OpenAIChatCompletionsModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )

    from .test_openai_api import warm

    set_tracing_disabled(True)  # nothing leaves the machine
    calls = []

    @function_tool
    def get_order_total(order_id: str) -> str:
        """The total of an order, in dollars."""
        calls.append(order_id)
        return "42.50"

    async def main():
        async with running(make_config(meta="embedded", openai_port=0)) as (server, _):
            warm(server.solving.pipeline.bank, "orders")
            model = OpenAIChatCompletionsModel(model="jitagent/orders", openai_client=client_for(server))
            agent = Agent(name="shop", model=model, tools=[get_order_total],
                          model_settings=ModelSettings(tool_choice="required"))
            result = await Runner.run(agent, "What is the total of order A-1001?", max_turns=4)
            assert calls == ["A-1001"] and "42.5" in result.final_output
            runs = server.solving.pipeline.bank.store.query("SELECT answer FROM runs")
            assert len(runs) == 2 and runs[0]["answer"] is None  # the paused run, then the answer
    asyncio.run(main())
