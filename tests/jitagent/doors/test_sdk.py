"""The sync SDK (`jitagent.JitAgent`) against a real server on 127.0.0.1 (scripted instant models)."""

import asyncio

import pytest

from harness_bank.router import ROUTES
from jitagent import JitAgent, JitAgentError

from .conftest import running


def test_the_sync_client_solves_reports_and_says_what_went_wrong(make_config):
    async def main():
        async with running(make_config()) as (server, _):
            with JitAgent(f"127.0.0.1:{server.port}", timeout=120) as agent:
                assert await asyncio.to_thread(agent.health) == "SERVING"
                checked = await asyncio.to_thread(agent.solve, "What is 6 * 7?", expect="42")
                unchecked = await asyncio.to_thread(agent.solve, "Write a haiku.", type="poem")
                reported = await asyncio.to_thread(agent.report, unchecked.run_id, 1.0, detail="liked")
                synthesized = await asyncio.to_thread(agent.synthesize, "Sort the words b a c.")
                with pytest.raises(JitAgentError) as refused:
                    await asyncio.to_thread(agent.report, "no-such-run", 2.0)
            return checked, unchecked, reported, synthesized, refused.value

    checked, unchecked, reported, synthesized, refused = asyncio.run(main())
    assert checked.verified and checked.reward == 0.0 and checked.passed is False  # the model answers 0
    assert checked.answer == "0" and checked.route in ROUTES
    assert not unchecked.verified and unchecked.reward is None and unchecked.passed is None
    assert (
        reported.cluster == "type:poem"
        and reported.harness_id == unchecked.harness_id
        and not reported.promoted
    )
    assert synthesized.run_id and synthesized.spec_json.startswith("{")
    assert refused.code == "INVALID_ARGUMENT" and refused.violations == [
        ("reward", "must be in [0, 1], got 2.0")
    ]


def test_python_functions_are_the_harness_tools_through_grpc_scripted(make_config):
    """`solve(tools=[f])`: the function's signature and docstring are its schema; the run pauses at a call,
    the SDK runs it and sends the conversation back, the next run answers (the scripted model calls under a
    required choice; with the choice back to auto, its harness answers)."""
    seen = []

    def get_order_total(order_id: str, currency: str = "USD") -> str:
        """The total of an order."""
        seen.append((order_id, currency))
        return "42.50"

    async def main():
        async with running(make_config()) as (server, _):
            with JitAgent(f"127.0.0.1:{server.port}", timeout=120) as agent:
                solved = await asyncio.to_thread(agent.solve, "What is the total of order A-1001?",
                                                 tools=[get_order_total], tool_choice="required")
            runs = server.solving.pipeline.bank.store.query("SELECT task_text, answer FROM runs")
            return solved, [dict(r) for r in runs]

    solved, runs = asyncio.run(main())
    assert seen == [("x", "USD")]  # the scripted call: its schema's required argument, the default kept
    assert solved.answer is not None and solved.tool_calls == ()  # the second run answered
    assert [r["answer"] for r in runs] == [None, solved.answer]
    assert runs[1]["task_text"] == ('user: What is the total of order A-1001?\n\n'
                                    'assistant: called get_order_total({"order_id": "x"})\n\n'
                                    'tool: get_order_total returned: 42.50')


def test_a_functions_schema_comes_from_its_signature():
    from jitagent.protocol.sdk import function_tool

    def convert(amount: float, to: str, rounding: int = 2) -> str:
        """Convert an amount."""

    tool = function_tool(convert)
    assert (tool.name, tool.description) == ("convert", "Convert an amount.")
    assert tool.parameters == {"type": "object", "required": ["amount", "to"], "additionalProperties": False,
                               "properties": {"amount": {"type": "number"}, "to": {"type": "string"},
                                              "rounding": {"type": "integer", "default": 2}}}


def test_a_call_runs_on_its_arguments_checked_and_what_does_not_fit_goes_back_as_the_result():
    from jitagent.protocol.sdk import function_tool, result_of

    def total(order_id: str, rounding: int = 2) -> dict:
        return {"order": order_id, "total": round(42.504, rounding)}

    functions = {"total": total}
    assert result_of(functions, {"name": "total", "arguments": {"order_id": "A", "rounding": "1"}}) == \
        '{"order": "A", "total": 42.5}'  # converted to its type; a result that is not text as JSON
    assert result_of(functions, {"name": "total", "arguments": {"order_id": "A", "made_up": 1}}).startswith(
        "error: made_up: Extra inputs are not permitted")
    assert result_of(functions, {"name": "other", "arguments": {}}) == "error: no function 'other'"
    with pytest.raises(ValueError, match=r"\*kwargs cannot be named"):
        function_tool(lambda **kwargs: None)
