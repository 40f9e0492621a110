"""Tenants and roles on a real server (issue 45): two tokens from one tokens file, a client's and the
operator's, through gRPC and the HTTP door. A client solves and reports on its runs; Rollback and
reports that name no run are the operator's (PERMISSION_DENIED, nothing stored); an unknown token is
UNAUTHENTICATED. The scripted model: who may call is what is tested."""

import asyncio
import json

import grpc
import httpx
import pytest

from jitagent.protocol.client import JitAgentClient
from jitagent.solving.access import add_token, digest
from jitagent.tasks.task import Task
from jitagent.v1 import jitagent_pb2 as pb

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


def test_one_token_and_a_tokens_file_at_once_or_online_training_across_tenants_does_not_start(make_config,
                                                                                               tmp_path):
    from jitagent.doors.server import JitAgentServer, StartupError
    from jitagent.improvement.retrain import RetrainConfig

    tokens = tmp_path / "tokens.json"
    add_token(tokens, "team-a", "client")
    with pytest.raises(StartupError, match="not both"):
        JitAgentServer(make_config(tokens_file=tokens, auth_token="s3cret"))
    config = make_config(tokens_file=tokens)
    config.pipeline.retrain = RetrainConfig(every=10)
    with pytest.raises(StartupError, match="not yet scoped by tenant"):
        JitAgentServer(config)


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


def test_a_tenants_verified_runs_teach_its_own_clusters_and_a_shared_pools_only(make_config, tmp_path):
    """Memory scoped by tenant (issue 45): the victim's verified solutions are examples in its clusters,
    never in the attacker's prompts (same type: without tenants, one cluster) nor its pool's training data;
    two tenants that name one pool learn from each other."""
    from harness_bank import Outcome
    from jitagent.harness.seeds import load_seeds, spec_reader
    from jitagent.improvement.examples import with_examples
    from jitagent.improvement.training.correct import Yield
    from jitagent.improvement.training.export import ExportConfig
    from jitagent.improvement.training.trainer import training_data

    variant = with_examples(load_seeds()["program_of_thought"])
    tokens = tmp_path / "tokens.json"
    victim, attacker = add_token(tokens, "victim", "client"), add_token(tokens, "attacker", "client")
    alice, bob = (add_token(tokens, name, "client", pool="shared") for name in ("alice", "bob"))

    def solved(n: int, cluster: str) -> Outcome:
        code = f"```python\nprint({n} * 7)  # BLUEBIRD\n```"
        return Outcome(harness_id=variant.id, task_id=f"t{n}", task_text=f"What is {n} times 7? BLUEBIRD",
                       reward=1.0, prompt_tokens=10, completion_tokens=5, wall_s=0.1, cluster=cluster,
                       task_type="times", answer=str(n * 7),
                       solution=[{"role": "assistant", "content": code}])

    async def solves(server, token: str, numbers=(11, 12, 13, 14)) -> tuple[list[str], set[str]]:
        """What the solver was sent on the tenant's tasks, and their clusters."""
        solver = server.solving.pipeline.solver
        before = len(solver.calls)
        async with JitAgentClient(f"127.0.0.1:{server.port}", token=token) as client:
            results = [await client.solve_result(Task(id=f"q{n}", prompt=f"What is {n} times 7?",
                                                      type="times")) for n in numbers]
        sent = [json.dumps(call["messages"]) for call in list(solver.calls)[before:]]
        return sent, {r.cluster for r in results}

    async def main():
        async with running(make_config(tokens_file=tokens)) as (server, _):
            bank = server.solving.pipeline.bank
            bank.add_harness(variant.model_dump(mode="json"))
            for teacher in (victim, alice):
                _, (cluster,) = await solves(server, teacher, (1,))
                for n in range(2, 8):
                    bank.record_outcome(solved(n, cluster))  # verified solutions of the teacher's cluster
            sent, clusters = await solves(server, attacker)
            assert clusters == {"attacker/type:times"} and sent
            assert not any("BLUEBIRD" in text for text in sent)  # nothing of the victim's reached it
            sent, clusters = await solves(server, bob)
            assert clusters == {"shared/type:times"}
            assert any("BLUEBIRD" in text for text in sent), "the pool's examples never reached its tenant"
            exported = {pool: json.dumps(await training_data(bank, spec_reader(bank), ExportConfig(pool=pool),
                                                             None, Yield()))
                        for pool in ("victim", "attacker", "shared")}  # what `train --pool` learns from
            assert "BLUEBIRD" in exported["victim"] and "BLUEBIRD" in exported["shared"]
            assert "BLUEBIRD" not in exported["attacker"]
    asyncio.run(main())


def test_a_tenants_quotas_refuse_with_resource_exhausted_and_store_nothing(make_config, tmp_path):
    """From the tokens file: at most `max_batch` tasks in one Synthesize, `max_open` solves at once."""
    tokens = tmp_path / "tokens.json"
    grant = {"token_sha256": digest("small"), "tenant": "small", "max_open": 1, "max_batch": 2}
    tokens.write_text(json.dumps({"tokens": [grant]}))

    async def main():
        async with running(make_config(tokens_file=tokens), token="small") as (server, client):
            bank = server.solving.pipeline.bank
            before = bank.stats()
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await client.synthesize(["What is 1 + 1?", "What is 2 + 2?", "What is 3 + 3?"])
            assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "3 tasks in one call; tenant 'small' may send at most 2" in err.value.details()
            assert bank.stats() == before  # nothing synthesized, nothing stored
            hold = asyncio.Event()

            async def one_task():
                yield pb.StreamTasksRequest(task=pb.Task(prompt="What is 0 + 0?"))
                await hold.wait()  # the stream stays open: one solve of the tenant's

            stream = client.stub.StreamTasks(one_task(), metadata=client.metadata)
            assert (await stream.read()).HasField("result")
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await client.solve_result(Task(id="t", prompt="What is 1 + 0?"))
            assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "its quota" in err.value.details()
            hold.set()
            assert await stream.read() == grpc.aio.EOF  # the stream ends with its requests
            assert (await client.solve_result(Task(id="u", prompt="What is 2 + 0?"))).run_id  # freed
    asyncio.run(main())


def test_a_client_lists_and_reads_the_seeds_and_its_own_tenants_harnesses_only(make_config, tmp_path):
    """A harness the victim's traffic made is NOT_FOUND to another client, as one not in the bank."""
    from harness_bank import Outcome
    from jitagent.harness.seeds import load_seeds
    from jitagent.harness.spec import parse_spec

    seeds = load_seeds()
    data = seeds["react"].model_dump(mode="json")
    data["limits"]["max_steps"] = 3
    theirs = parse_spec(data).derive(origin="synthesized", parent_id=seeds["react"].id, generator="test")
    tokens = tmp_path / "tokens.json"
    victim, attacker = add_token(tokens, "victim", "client"), add_token(tokens, "attacker", "client")
    operator = add_token(tokens, "ops", "operator")

    async def listed(port: int, token: str) -> set[str]:
        async with JitAgentClient(f"127.0.0.1:{port}", token=token) as client:
            return {h.id for h in (await client.list_harnesses(limit=1000)).harnesses}

    async def main():
        async with running(make_config(tokens_file=tokens), token=attacker) as (server, attacking):
            bank = server.solving.pipeline.bank
            bank.add_harness(theirs.model_dump(mode="json"))
            bank.record_outcome(Outcome(harness_id=theirs.id, task_id="t", task_text="What is 2 times 7?",
                                        reward=1.0, prompt_tokens=10, completion_tokens=5, wall_s=0.1,
                                        cluster="victim/type:times", verdict="ok"))
            seen = {token: await listed(server.port, token) for token in (victim, attacker, operator)}
            assert {s.id for s in seeds.values()} <= seen[attacker] and theirs.id not in seen[attacker]
            assert theirs.id in seen[victim] and theirs.id in seen[operator]
            for refused in (attacking.get_harness(theirs.id), attacking.lineage(theirs.id)):
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await refused
                assert err.value.code() == grpc.StatusCode.NOT_FOUND
                assert "unknown harness id" in err.value.details()
            async with JitAgentClient(f"127.0.0.1:{server.port}", token=victim) as own:
                chain = await own.lineage(theirs.id)
            assert [h.id for h in chain.chain] == [theirs.id, seeds["react"].id]
    asyncio.run(main())


def test_the_operator_says_what_teaches_a_tenant_and_every_outcome_names_its_evidence(make_config, tmp_path):
    """`teaches` in the tokens file: a tenant whose `exact` verifiers and reports the operator does not take
    as proof solves as before, but nothing of it is learned; what is learned names what admitted it."""
    from jitagent.improvement.training.export import ExportConfig, usable

    tokens = tmp_path / "tokens.json"
    open_token = add_token(tokens, "open", "client")
    strict_token = add_token(tokens, "strict", "client", teaches=["numeric"])
    exact = Task(id="e", prompt="What is 1 + 1?", type="add", verifier={"kind": "exact", "expected": "2"})
    numeric = Task(id="n", prompt="What is 2 + 2?", type="add", verifier={"kind": "numeric", "expected": 4})

    async def main():
        async with running(make_config(tokens_file=tokens), token=strict_token) as (server, strict):
            bank = server.solving.pipeline.bank
            untrusted, trusted = await strict.solve_result(exact), await strict.solve_result(numeric)
            assert untrusted.HasField("reward") and not untrusted.bank_decision  # judged, not learned from
            assert not bank.run(untrusted.run_id).outcomes and trusted.bank_decision
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await strict.report_outcome(untrusted.run_id, 1.0)
            assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
            assert "tenant 'strict''s reports do not teach" in err.value.details()
            async with JitAgentClient(f"127.0.0.1:{server.port}", token=open_token) as opened:
                reported = await opened.solve_result(Task(id="o", prompt="What is 3 + 3?", type="add"))
                await opened.report_outcome(reported.run_id, 1.0)
            kept = {o.run_id: o.evidence for o in bank.solutions(None, 0.0, None)}
            assert kept[trusted.run_id] == "verifier:numeric" and kept[reported.run_id] == "report:open"
            assert untrusted.run_id not in kept
            assert {r.evidence for r in usable(bank, ExportConfig(pool="strict"))} == {"verifier:numeric"}
    asyncio.run(main())


def test_a_tenants_stored_runs_and_clusters_are_bounded_and_a_refusal_keeps_nothing(make_config, tmp_path):
    """`max_runs` bounds what the bank keeps of a tenant (runs, and so outcomes and labelled tasks);
    `max_clusters` the clusters of its pool. Past either: RESOURCE_EXHAUSTED, nothing run or stored."""
    tokens = tmp_path / "tokens.json"
    grants = [{"token_sha256": digest("few"), "tenant": "few", "max_runs": 2},
              {"token_sha256": digest("narrow"), "tenant": "narrow", "max_clusters": 1}]
    tokens.write_text(json.dumps({"tokens": grants}))

    def add(a: int, kind: str = "add") -> Task:
        return Task(id=f"{kind}{a}", prompt=f"What is {a} {'+' if kind == 'add' else '-'} 1?", type=kind)

    async def refused(client, task: Task, said: str) -> None:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await client.solve_result(task)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and said in err.value.details()

    async def main():
        async with running(make_config(tokens_file=tokens), token="few") as (server, few):
            bank = server.solving.pipeline.bank
            first = await few.solve_result(add(1), request_id="r1")
            await few.solve_result(add(2))
            before = bank.stats()
            await refused(few, add(3), "tenant 'few' has 2 runs kept, its quota (max_runs 2)")
            assert bank.stats() == before
            assert (await few.solve_result(add(1), request_id="r1")).run_id == first.run_id  # a replay is not
            async with JitAgentClient(f"127.0.0.1:{server.port}", token="narrow") as narrow:
                await narrow.solve_result(add(1))
                before = bank.stats()
                await refused(narrow, add(1, "sub"), "has 1 clusters, its quota (max_clusters 1)")
                assert bank.stats() == before
                assert (await narrow.solve_result(add(2))).cluster == "narrow/type:add"  # its cluster: room
    asyncio.run(main())
