"""`jitagent mcp` over stdio, driven by the official MCP SDK's own client as an agent would: the tools,
a solve verified by its expected answer, a report on an unverified one, a resource per cluster. The
scripted model makes it a protocol test (the pipeline behind it is tested elsewhere, with real models)."""

import asyncio
import contextlib
import json
import os
import subprocess
import sys

import httpx
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


def test_over_http_a_request_without_a_known_token_is_401_and_a_tenants_token_solves_and_reports(tmp_path):
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    from jitagent.solving.access import add_token

    from .conftest import free_port

    tokens, port = tmp_path / "tokens.json", free_port()
    token = add_token(tokens, "team-a", "client")
    url = f"http://127.0.0.1:{port}/mcp"
    server = subprocess.Popen([sys.executable, *scripted_server(tmp_path).args, "--http-port", str(port),
                               "--tokens-file", str(tokens)], stderr=subprocess.DEVNULL)

    async def main():
        async with httpx.AsyncClient(timeout=10) as http:
            for _ in range(600):  # the models and the bank load first
                with contextlib.suppress(httpx.TransportError):
                    refused = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
                    break
                await asyncio.sleep(0.1)
            assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
            wrong = await http.post(url, json={}, headers={"authorization": "Bearer wrong"})
            assert wrong.status_code == 401
            two = [("authorization", "Bearer wrong"), ("authorization", f"Bearer {token}")]
            assert (await http.post(url, json={}, headers=two)).status_code == 401  # one caller, or none
        client = create_mcp_http_client(headers={"authorization": f"Bearer {token}"})
        async with client, streamable_http_client(url, http_client=client) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            task = {"task": "What is 0 + 0?", "expect": "0", "type": "add"}
            solved = await session.call_tool("solve", task)
            assert not solved.is_error and solved.structured_content["reward"] == 1.0, solved.content
            draft = await session.call_tool("solve", {"task": "Write a haiku about rivers."})
            draft = draft.structured_content
            reported = await session.call_tool("report", {"run_id": draft["run_id"], "reward": 1.0})
            assert not reported.is_error, reported.content
    try:
        asyncio.run(main())
    finally:
        server.terminate()
        server.wait(30)


def test_over_http_without_a_token_configured_mcp_does_not_start(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JITAGENT_AUTH_TOKEN"}
    done = subprocess.run([sys.executable, *scripted_server(tmp_path).args, "--http-port", "1"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "MCP over HTTP answers only callers with a token" in done.stderr
    assert "Traceback" not in done.stderr and not done.stdout
