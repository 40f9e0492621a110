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
