"""`jitagent mcp` over stdio, driven by the official MCP SDK's own client as an agent would: the tools,
a solve verified by its expected answer, a report on an unverified one, a resource per cluster. The
scripted model makes it a protocol test (the pipeline behind it is tested elsewhere, with real models)."""

import asyncio
import json
import os
import sys

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client


def scripted_server(data_dir) -> StdioServerParameters:
    """`jitagent mcp` over stdio with the scripted meta-model (the protocol is what is tested)."""
    return StdioServerParameters(
        command=sys.executable, args=["-m", "jitagent", "mcp", "--meta-model", "scripted", "--no-dry-run",
                                      "--n", "1", "--data-dir", str(data_dir)], env=dict(os.environ))


def test_solve_report_and_cluster_resources_over_stdio_with_the_sdks_client_scripted(tmp_path):
    server = scripted_server(tmp_path)

    async def main():
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools) == {"solve", "report"}
            assert {"task", "expect", "verifier"} <= set(tools["solve"].input_schema["properties"])
            solved = await session.call_tool("solve", {"task": "What is 0 + 0?", "expect": "0",
                                                       "type": "add"})
            assert not solved.is_error, solved.content
            result = solved.structured_content
            assert result["answer"] == "0" and result["reward"] == 1.0 and result["cluster"] == "type:add"
            draft = await session.call_tool("solve", {"task": "Write a haiku about rivers."})
            draft = draft.structured_content
            assert draft["reward"] is None  # unverified: the reporter tells
            reported = await session.call_tool("report", {"run_id": draft["run_id"], "reward": 1.0})
            assert not reported.is_error and reported.structured_content["harness_id"] == draft["harness_id"]
            again = await session.call_tool("report", {"run_id": draft["run_id"], "reward": 0.0})
            assert again.is_error and "already has an outcome" in again.content[0].text
            resources = {r.name: r for r in (await session.list_resources()).resources}
            assert "type:add" in resources and draft["cluster"] in resources
            read_back = await session.read_resource(resources["type:add"].uri)
            arms = json.loads(read_back.contents[0].text)
            assert [a["harness_id"] for a in arms if a["runs"]] == [result["harness_id"]]
    asyncio.run(main())


def test_expect_as_the_http_door_takes_it_and_a_cluster_s_uri_as_the_readme_spells_it(tmp_path):
    """`expect` a JSON number (the HTTP door takes `"expect": 7`), a verifier object, and the cluster's
    resource read at `jitagent://clusters/type:add` (the README's spelling) as at `type%3Aadd`."""
    server = scripted_server(tmp_path)

    async def main():
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            solved = await session.call_tool("solve", {"task": "What is 0 + 0?", "expect": 0, "type": "add"})
            assert not solved.is_error, solved.content
            assert solved.structured_content["reward"] == 1.0
            regex = await session.call_tool("solve", {"task": "What is 1 - 1?", "type": "add",
                                                      "verifier": {"kind": "regex", "pattern": "^0$"}})
            assert not regex.is_error and regex.structured_content["reward"] == 1.0, regex.content
            both = await session.call_tool("solve", {"task": "x", "expect": 1, "verifier": {"kind": "none"}})
            assert both.is_error and "not both" in both.content[0].text
            plain = await session.read_resource("jitagent://clusters/type:add")
            escaped = await session.read_resource("jitagent://clusters/type%3Aadd")
            assert plain.contents[0].text == escaped.contents[0].text
            assert json.loads(plain.contents[0].text)[0]["runs"] == 2
            with pytest.raises(Exception, match="no cluster 'type:nothing'"):
                await session.read_resource("jitagent://clusters/type:nothing")
    asyncio.run(main())


@pytest.mark.slow
def test_an_mcp_client_solves_a_task_on_the_embedded_models(tmp_path):
    """The same door with the real embedded models behind it (the small one, for time): a cold cluster,
    so the meta-model writes the harness and the solver runs it; the verdict comes back to the client."""
    server = StdioServerParameters(
        command=sys.executable, env=dict(os.environ),
        args=["-m", "jitagent", "mcp", "--meta-model", "smollm2-135m", "--solver-model", "smollm2-135m",
              "--n", "1", "--no-dry-run", "--data-dir", str(tmp_path)])

    async def main():
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            solved = await session.call_tool("solve", {"task": "What is 2 + 3? Answer with the number only.",
                                                       "expect": "5", "type": "add"})
            assert not solved.is_error, solved.content
            result = solved.structured_content
            assert result["error"] is None and 0.0 <= result["reward"] <= 1.0  # verified, whatever it earned
            assert result["cluster"] == "type:add"
            assert result["route"] in ("synthesized", "variant", "fallback", "explore") and result["run_id"]
    asyncio.run(main())
