"""Tenants and roles on a real server (issue 45): two tokens from one tokens file, a client's and the
operator's, through gRPC and the HTTP door. A client solves and reports on its runs; Rollback and
reports that name no run are the operator's (PERMISSION_DENIED, nothing stored); an unknown token is
UNAUTHENTICATED. The scripted model: who may call is what is tested."""

import asyncio

import grpc
import httpx
import pytest

from jitagent.protocol.client import JitAgentClient
from jitagent.solving.access import add_token
from jitagent.tasks.task import Task

from .conftest import free_port, running


def test_a_client_solves_and_reports_and_only_the_operator_rolls_back_or_reports_free_form(make_config,
                                                                                            tmp_path):
    tokens = tmp_path / "tokens.json"
    client_token, operator_token = add_token(tokens, "team-a", "client"), add_token(tokens, "ops", "operator")
    config = make_config(tokens_file=tokens, openai_port=free_port())

    async def main():
        async with running(config, token=client_token) as (server, client):
            solved = await client.solve_result(Task(id="t", prompt="What is 0 + 0?", type="add"))
            reported = await client.report_outcome(solved.run_id, 1.0)
            assert reported.harness_id == solved.harness_id
            clusters = await server.solving.cluster_names()
            free_form = client.report_harness_outcome(solved.harness_id, "What is 1 + 1?", 1.0, wall_s=1.0,
                                                      task_type="poisoned")
            for refused in (client.rollback("type:add"), free_form):
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await refused
                assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
                assert "is the operator's; tenant 'team-a'" in err.value.details()
            assert await server.solving.cluster_names() == clusters  # the refused report stored nothing
            async with JitAgentClient(f"127.0.0.1:{server.port}", token=operator_token) as operator:
                done = await operator.report_harness_outcome(solved.harness_id, "What is 1 + 1?", 1.0,
                                                             wall_s=1.0, task_type="add")
                assert done.cluster == "type:add"
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await operator.rollback("type:add")
                assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION  # allowed: nothing to restore
            async with JitAgentClient(f"127.0.0.1:{server.port}", token="not-a-token") as stranger:
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await stranger.list_harnesses()
                assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
            await http_door(server.openai_port, client_token)
    asyncio.run(main())


async def http_door(port: int, token: str) -> None:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
        body = {"model": "jitagent", "messages": [{"role": "user", "content": "What is 2 + 2?"}]}
        assert (await http.post("/v1/chat/completions", json=body)).status_code == 401
        bearer = {"authorization": f"Bearer {token}"}
        answer = await http.post("/v1/chat/completions", json=body, headers=bearer)
        assert answer.status_code == 200, answer.text
        feedback = {"run_id": answer.json()["id"], "reward": 1.0}
        reported = await http.post("/v1/jitagent/feedback", json=feedback, headers=bearer)
        assert reported.status_code == 200, reported.text


def test_one_token_and_a_tokens_file_at_once_does_not_start(make_config, tmp_path):
    from jitagent.doors.server import JitAgentServer, StartupError

    tokens = tmp_path / "tokens.json"
    add_token(tokens, "team-a", "client")
    with pytest.raises(StartupError, match="not both"):
        JitAgentServer(make_config(tokens_file=tokens, auth_token="s3cret"))


def test_a_run_id_is_its_tenants_a_request_id_names_a_run_in_the_callers_tenant_only(make_config, tmp_path):
    """The attack of issue 45: an attacker claims a request_id first, or replays a victim's run id, or
    reports on it; with tenants each lands in the attacker's own namespace, or is NOT_FOUND."""
    tokens = tmp_path / "tokens.json"
    attacker, victim = add_token(tokens, "attacker", "client"), add_token(tokens, "victim", "client")
    config = make_config(tokens_file=tokens)
    secret = Task(id="v", prompt="What is 0 + 0?", type="add", verifier={"kind": "exact", "expected": "0"})

    async def main():
        async with running(config, token=attacker) as (server, attacking):
            claimed = await attacking.solve_result(Task(id="a", prompt="What is 1 - 1?"), request_id="r1")
            async with JitAgentClient(f"127.0.0.1:{server.port}", token=victim) as victim_client:
                own = await victim_client.solve_result(secret, request_id="r1")
            assert (claimed.run_id, own.run_id) == ("attacker:r1", "victim:r1") and own.task_id == "v"
            replayed = await attacking.solve_result(Task(id="a2", prompt="What is 2 - 2?"),
                                                    request_id=own.run_id)
            assert replayed.run_id == f"attacker:{own.run_id}" and replayed.task_id == "a2"  # its own run
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await attacking.report_outcome(own.run_id, 0.0)
            assert err.value.code() == grpc.StatusCode.NOT_FOUND and "victim:r1" in err.value.details()
    asyncio.run(main())
