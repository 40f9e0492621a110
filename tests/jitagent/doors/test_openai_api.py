"""The OpenAI-compatible door of a real server on a real loopback port, called with the official `openai`
client: a verified task through the feedback route, a streamed one, a bad token, huge prompts refused.
Those use the scripted model (protocol tests); an agent framework's own OpenAI model class solves a task
through the door with the real embedded models (slow)."""

import asyncio
import json

import grpc
import httpx
import openai
import pytest
from openai import AsyncOpenAI

from jitagent.doors.openai_http import reply
from jitagent.solving.result import Solved, Spent
from jitagent.tasks.task import MAX_PROMPT_CHARS

from .conftest import running

TOKEN = "door-token"


def client_for(server, token=TOKEN) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=f"http://127.0.0.1:{server.openai_port}/v1", api_key=token, max_retries=0)


def test_a_task_solved_through_the_openai_client_is_verified_later_through_the_feedback_route_scripted(
        make_config):
    async def main():
        config = make_config(openai_port=0, auth_token=TOKEN)
        async with running(config, token=TOKEN) as (server, grpc_client):
            client = client_for(server)
            raw = await client.chat.completions.with_raw_response.create(
                model="jitagent/haiku", messages=[{"role": "user", "content": "Write a haiku about rivers."}])
            completion = raw.parse()
            run_id = raw.headers["x-jitagent-run-id"]
            assert completion.id == run_id and completion.choices[0].message.role == "assistant"
            assert completion.choices[0].message.content == "0"  # what the scripted model answers
            extra = completion.model_extra["jitagent"]
            assert extra["cluster"] == "type:haiku" and extra["reward"] is None  # unverified: no reward
            usage = completion.usage  # every token: synthesis (a cold cluster synthesizes) and the run
            assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens > 0
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.openai_port}",
                                         headers={"authorization": f"Bearer {TOKEN}"}) as http:
                reported = await http.post("/v1/jitagent/feedback", json={"run_id": run_id, "reward": 1.0,
                                                                          "detail": "the user kept it"})
                assert reported.status_code == 200, reported.text
                assert reported.json()["cluster"] == "type:haiku"
                again = await http.post("/v1/jitagent/feedback", json={"run_id": run_id, "reward": 0.0})
                unknown = await http.post("/v1/jitagent/feedback", json={"run_id": "nope", "reward": 1})
                assert (again.status_code, unknown.status_code) == (409, 404)
                models = (await http.get("/v1/models")).json()
                assert {m["id"] for m in models["data"]} == {"jitagent", "jitagent/haiku"}
            # the same run through gRPC: one pipeline, one bank, and a run takes one outcome
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await grpc_client.report_outcome(run_id, 0.5)
            assert refused.value.code() == grpc.StatusCode.ALREADY_EXISTS
    asyncio.run(main())


def test_a_streamed_answer_comes_after_keep_alive_comments_scripted(make_config):
    async def main():
        config = make_config(meta="scripted:300", openai_port=0, keepalive_s=0.05)
        async with running(config) as (server, _):
            request = {"model": "jitagent", "stream": True, "stream_options": {"include_usage": True},
                       "messages": [{"role": "user", "content": "What is 0 + 0?"}], "jitagent": {"expect": 0}}
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.openai_port}") as http, \
                    http.stream("POST", "/v1/chat/completions", json=request) as response:
                assert response.status_code == 200 and response.headers["x-jitagent-run-id"]
                lines = [line async for line in response.aiter_lines() if line]
            assert lines[0] == ": keep-alive" and lines[-1] == "data: [DONE]"
            chunks = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]
                      if line.startswith("data: ")]
            assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": "0"}
            assert chunks[0]["jitagent"]["reward"] == 1.0  # verified by the expected answer
            assert chunks[1]["choices"][0]["finish_reason"] == "stop"
            assert chunks[2]["usage"]["total_tokens"] > 0
            # the official client reads the same stream
            stream = await client_for(server).chat.completions.create(
                model="jitagent", stream=True, messages=[{"role": "user", "content": "Say zero."}])
            text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
            assert text == "0"
    asyncio.run(main())


def test_a_bad_token_an_unknown_model_and_huge_prompts_are_refused_before_any_work_scripted(make_config):
    async def main():
        async with running(make_config(openai_port=0, auth_token=TOKEN), token=TOKEN) as (server, _):
            with pytest.raises(openai.AuthenticationError, match="bearer token"):
                await client_for(server, token="wrong").chat.completions.create(
                    model="jitagent", messages=[{"role": "user", "content": "hi"}])
            with pytest.raises(openai.NotFoundError, match="jitagent/<task type>"):
                await client_for(server).chat.completions.create(
                    model="gpt-4", messages=[{"role": "user", "content": "hi"}])
            with pytest.raises(openai.BadRequestError, match="at most 100,000"):
                await client_for(server).chat.completions.create(
                    model="jitagent", messages=[{"role": "user", "content": "x" * (MAX_PROMPT_CHARS + 1)}])
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.openai_port}",
                                         headers={"authorization": f"Bearer {TOKEN}"}) as http:
                too_big = await http.post("/v1/chat/completions", content=b"x" * (5 << 20))
                assert too_big.status_code == 413
            assert server.solving.pipeline.bank.stats()["outcomes"] == 0
            assert server.solving.pipeline.bank.store.query("SELECT COUNT(*) FROM runs")[0][0] == 0
    asyncio.run(main())


@pytest.mark.slow
def test_an_agent_frameworks_openai_model_solves_a_task_through_the_door_with_embedded_models(make_config):
    """The OpenAI Agents SDK's own chat-completions model class, pointed at the door: its Runner gets the
    answer jitagent's harness produced, and the run is in the bank under the id the door returned."""
    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled

    set_tracing_disabled(True)  # nothing leaves the machine

    async def main():
        config = make_config(meta="embedded", openai_port=0, auth_token=TOKEN)
        async with running(config) as (server, _):
            warm(server.solving.pipeline.bank, "chain_sum")
            model = OpenAIChatCompletionsModel(model="jitagent/chain_sum", openai_client=client_for(server))
            agent = Agent(name="arithmetic", model=model)
            result = await Runner.run(agent, "State the final answer to the following arithmetic problem: "
                                             "4 + 3 =")
            runs = server.solving.pipeline.bank.store.query("SELECT cluster, answer, route FROM runs")
            assert [(r["cluster"], r["answer"]) for r in runs] == [("type:chain_sum", result.final_output)]
            assert runs[0]["route"] != "synthesized" and result.final_output.strip()  # a warm arm answered
            assert result.context_wrapper.usage.total_tokens > 0  # the door's usage, as the framework read it
    asyncio.run(main())


def warm(bank, task_type: str) -> None:
    """The type's cluster's evidence, as `bank warm` would leave it: direct right on 24 tasks, so the
    router exploits it (a cold cluster would synthesize first)."""
    from harness_bank import Outcome
    from jitagent.harness.seeds import load_seeds

    seed = load_seeds()["direct"]
    for i in range(24):
        bank.record_outcome(Outcome(harness_id=seed.id, task_id=f"sum-{i}", task_text=f"{i} + {i + 1} =",
                                    reward=1.0, prompt_tokens=100, completion_tokens=20, wall_s=2.0,
                                    cluster=f"type:{task_type}", task_type=task_type))


def test_a_run_with_no_answer_says_so_in_the_reply_the_agent_reads():
    spent = Spent(prompt_tokens=5, completion_tokens=5, wall_s=0.1)
    solved = Solved(run_id="r", task_id="t", route="exploit", harness_id="h", harness_name="direct",
                    cluster="c", answer=None, passed=None, reward=None, verdict="", error=None,
                    interrupted=False, cost=spent, total_cost=spent, wall_s=0.1, bank_decision="",
                    examples=())
    assert reply(solved) == "[jitagent: the harness gave no answer]"  # never an empty reply
    failed = solved.model_copy(update={"error": "model failed: timed out"})
    assert reply(failed) == "[jitagent: the harness gave no answer (model failed: timed out)]"
    assert reply(solved.model_copy(update={"answer": "42"})) == "42"
