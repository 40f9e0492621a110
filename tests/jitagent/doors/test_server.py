"""The gRPC service over the network: a real grpc.aio server on a free 127.0.0.1 port."""

import asyncio
import json
import logging
import signal
import subprocess
import sys
import threading
import urllib.request

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from jitagent.doors.server import pipeline_for
from jitagent.harness.seeds import load_seeds
from jitagent.improvement.practice import PracticeConfig
from jitagent.tasks.task import Task, VerifierSpec
from jitagent.v1 import jitagent_pb2 as pb

from .conftest import free_port, running, until_idle

SEEDS = load_seeds()


def code_of(exc: grpc.aio.AioRpcError) -> grpc.StatusCode:
    return exc.code()


def test_synthesize_batch_of_tasks_with_n_candidates(make_config):
    async def main():
        async with running(make_config()) as (server, client):
            reply = await client.synthesize(["Reverse the string 'abc'.", "What is 12 * 13?"], n=2)
            assert len(reply.results) == 2
            for result in reply.results:
                assert result.route == pb.ROUTE_SYNTHESIZED and len(result.candidates) == 2 and result.run_id
                assert result.harness.id and result.arms
                assert result.cost.synthesis.HasField("completion_tokens")
                assert all(c.rounds for c in result.candidates)
    asyncio.run(main())


def test_bad_requests_get_status_codes_and_the_server_keeps_serving(make_config):
    async def main():
        async with running(make_config()) as (server, client):
            cases = [
                (client.synthesize([""]), grpc.StatusCode.INVALID_ARGUMENT, "tasks[0].prompt"),
                (client.synthesize(["ok"], n=99), grpc.StatusCode.INVALID_ARGUMENT,
                 "n: must be between 1 and 8"),
                (client.stub.Synthesize(pb.SynthesizeRequest()), grpc.StatusCode.INVALID_ARGUMENT, "tasks"),
                (client.get_harness("deadbeef"), grpc.StatusCode.NOT_FOUND, "unknown harness id"),
                (client.lineage("deadbeef"), grpc.StatusCode.NOT_FOUND, "unknown harness id"),
                (client.rollback("no-such-cluster"), grpc.StatusCode.FAILED_PRECONDITION, "no incumbent"),
                (client.report_outcome("some-run", 3.0), grpc.StatusCode.INVALID_ARGUMENT, "reward"),
                (client.report_outcome("no-such-run", 1.0), grpc.StatusCode.NOT_FOUND, "no run"),
                (client.synthesize(["x" * (5 << 20)]), grpc.StatusCode.RESOURCE_EXHAUSTED, ""),
            ]
            for call, status, fragment in cases:
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await call
                assert err.value.code() == status and fragment in (err.value.details() or "")
            assert await client.health() == "SERVING"
            assert len((await client.synthesize(["still fine?"])).results) == 1
    asyncio.run(main())


def test_bank_reads_and_report_outcome_changing_an_incumbent(make_config):
    async def main():
        async with running(make_config()) as (server, client):
            listed = await client.list_harnesses(origin="seed")
            assert len(listed.harnesses) == len(load_seeds())
            direct, pot = SEEDS["direct"].id, SEEDS["program_of_thought"].id
            assert (await client.get_harness(pot)).name == "program_of_thought"
            text = "How many apples are left after eating 3 of 17?"
            report = client.report_harness_outcome
            first = [await report(direct, text, reward, task_type="fruit", prompt_tokens=10,
                                  completion_tokens=5, wall_s=1.0) for reward in (0.0, 0.0, 1.0, 0.0)]
            # one report does not promote
            assert first[0].incumbent_id == "" and first[0].cluster == "type:fruit"
            assert first[-1].incumbent_id == direct
            replies = [await report(pot, text, 1.0, task_type="fruit", prompt_tokens=10, completion_tokens=5,
                                    wall_s=1.0) for _ in range(6)]
            assert any(r.promoted for r in replies) and replies[-1].incumbent_id == pot
            rolled = await client.rollback("type:fruit")
            assert rolled.restored == direct and rolled.replaced == pot
            synthesized = (await client.synthesize(["Sort the words b a c."])).results[0]
            chain = await client.lineage(synthesized.harness.id)
            assert [h.id for h in chain.chain][-1] == synthesized.harness.parent_id
    asyncio.run(main())


def test_auth_on_and_health_and_reflection_stay_open(make_config):
    async def main():
        async with running(make_config(auth_token="s3cret"), token="s3cret") as (server, client):
            assert len((await client.list_harnesses()).harnesses) == len(load_seeds())
            client.metadata = (("authorization", "Bearer wrong"),)
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await client.list_harnesses()
            assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
            client.metadata = ()
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await client.synthesize(["x"])
            assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert await client.health() == "SERVING"
    asyncio.run(main())


def test_auth_off_needs_no_token(make_config):
    async def main():
        async with running(make_config()) as (server, client):
            assert len((await client.list_harnesses()).harnesses) == len(load_seeds())
    asyncio.run(main())


def test_reflection_lists_the_service(make_config):
    config = make_config()

    async def start():
        async with running(config) as (server, client):
            def probe():
                with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                    return set(ProtoReflectionDescriptorDatabase(channel).get_services())
            return await asyncio.to_thread(probe)
    services = asyncio.run(start())
    assert {"jitagent.v1.JitAgent", "grpc.health.v1.Health"} <= services


def test_health_not_serving_while_loading_then_serving_then_not_serving_on_shutdown(make_config):
    gate = threading.Event()

    def slow_build(config):
        gate.wait(30)
        return pipeline_for(config)

    async def main():
        async with running(make_config(), build=slow_build) as (server, client):
            stub = health_pb2_grpc.HealthStub(client.channel)
            watch = stub.Watch(health_pb2.HealthCheckRequest(service="jitagent.v1.JitAgent"))
            seen = [(await watch.read()).status]
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await client.list_harnesses()
            assert err.value.code() == grpc.StatusCode.UNAVAILABLE and "loading" in err.value.details()
            gate.set()
            seen.append((await watch.read()).status)
            await server.health.enter_graceful_shutdown()
            seen.append((await watch.read()).status)
            watch.cancel()
        S = health_pb2.HealthCheckResponse
        assert seen == [S.NOT_SERVING, S.SERVING, S.NOT_SERVING]
    asyncio.run(main())


def test_queue_full_is_resource_exhausted(make_config):
    async def main():
        async with running(make_config(concurrency=1, max_queue=1)) as (server, client):
            await server.solving.slots.acquire()  # hold the only slot: requests must queue
            waiting = asyncio.create_task(client.synthesize(["first"]))
            while server.solving.waiting < 1:
                await asyncio.sleep(0.01)
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await client.synthesize(["second"])
            assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "queue full" in err.value.details()
            server.solving.slots.release()
            assert len((await waiting).results) == 1
    asyncio.run(main())


def test_metrics_are_exposed_in_prometheus_format(make_config):
    port = free_port()

    async def main():
        async with running(make_config(metrics_port=port)) as (server, client):
            await client.synthesize(["What is 1 + 1?"])
            url = f"http://127.0.0.1:{port}/metrics"
            text = await asyncio.to_thread(lambda: urllib.request.urlopen(url).read().decode())
        assert 'jitagent_rpc_requests_total{code="OK",method="Synthesize"} 1.0' in text
        assert "jitagent_rpc_latency_seconds_bucket" in text and "jitagent_queue_depth" in text
        assert 'jitagent_routes_total{route="synthesized"}' in text
        assert 'jitagent_tokens_total{phase="synthesis"}' in text
    asyncio.run(main())


def test_tls_from_cert_and_key_files(make_config, tmp_path):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert),
                    "-days", "1", "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True)
    config = make_config(tls_cert=cert, tls_key=key)

    async def main():
        from jitagent.protocol.client import JitAgentClient
        async with running(config) as (server, _):
            async with JitAgentClient(f"127.0.0.1:{server.port}", tls_ca=cert.read_bytes()) as secure:
                assert len((await secure.list_harnesses()).harnesses) == len(load_seeds())
            async with JitAgentClient(f"127.0.0.1:{server.port}") as plain:
                with pytest.raises(grpc.aio.AioRpcError):
                    await plain.list_harnesses()
    asyncio.run(main())


def test_sigterm_shuts_down_gracefully_and_flushes_the_bank(tmp_path):
    port = free_port()
    data = tmp_path / "data"
    proc = subprocess.Popen([sys.executable, "-m", "jitagent", "serve", "--port", str(port), "--data-dir",
                             str(data), "--meta-model", "scripted", "--no-dry-run", "--grace", "5"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    async def use():
        from jitagent.protocol.client import JitAgentClient
        async with JitAgentClient(f"127.0.0.1:{port}") as client:
            await client.wait_ready(120)
            await client.synthesize(["Count the vowels in 'banana'."])
    try:
        asyncio.run(use())
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, out
    assert '"event": "stopped"' in out and '"event": "task"' in out
    from harness_bank import HarnessBank
    bank = HarnessBank(data / "bank.db")
    assert not bank.repaired_on_open and bank.stats()["candidates"] == 3  # the default n=3, all kept


def test_a_dead_model_back_end_is_unavailable_not_a_crash(make_config):
    async def main():
        async with running(make_config(meta=f"http://127.0.0.1:{free_port()}")) as (server, client):
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await client.synthesize(["What is 2 + 2?"])
            assert err.value.code() == grpc.StatusCode.UNAVAILABLE
            assert "model back-end failed" in err.value.details()
            responses = [r async for r in client.stream([Task(id="a", prompt="x"), Task(id="b", prompt="y")])]
            assert [r.sequence for r in responses] == [0, 1]
            assert all(r.error.code == grpc.StatusCode.UNAVAILABLE.value[0] for r in responses)
            assert "cannot reach the model server" in responses[0].error.message
            assert await client.health() == "SERVING"
    asyncio.run(main())


def test_an_unverified_solve_has_no_reward_and_a_report_by_run_id_lands_on_that_run(make_config):
    async def main():
        async with running(make_config()) as (server, client):
            events = [e async for e in client.solve(Task(id="poem", prompt="Write a haiku.", type="poem"))]
            result = events[-1].result
            assert {e.run_id for e in events} == {result.run_id} and result.run_id
            assert not result.HasField("reward") and not result.HasField("passed")
            assert not any(e.HasField("bank") for e in events)  # nothing to learn from yet
            reply = await client.report_outcome(result.run_id, 1.0, detail="the user liked it")
            assert (reply.cluster, reply.harness_id) == ("type:poem", result.harness_id)
            assert not reply.promoted and reply.incumbent_id == ""  # one report is one outcome, no promotion
            for run_id, status in ((result.run_id, grpc.StatusCode.ALREADY_EXISTS),
                                   ("no-such-run", grpc.StatusCode.NOT_FOUND)):
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await client.report_outcome(run_id, 1.0)
                assert err.value.code() == status
    asyncio.run(main())


def test_a_failure_reported_with_its_check_is_practised_and_a_check_that_cannot_judge_is_refused(make_config):
    config = make_config()
    config.pipeline.practice = PracticeConfig(tries=1)

    async def main():
        async with running(config) as (server, client):
            events = [e async for e in client.solve(Task(id="sum", prompt="What is 2 + 2?", type="sums"))]
            run_id = events[-1].result.run_id
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await client.report_outcome(run_id, 0.0, check=VerifierSpec(kind="regex", pattern="("))
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert err.value.details().startswith("check.regex.pattern: does not compile")
            pipeline = server.solving.pipeline
            assert pipeline.bank.run(run_id).outcomes == 0  # refused whole: the report can come again
            await client.report_outcome(run_id, 0.0, check=VerifierSpec(kind="numeric", expected=4))
            await pipeline.practice.settle()
            tally = pipeline.bank.practice_tally([run_id])
            assert tally.tries == 1 and tally.wall_s > 0
            assert pipeline.bank.run(run_id).outcomes == 1  # the served run's one outcome, the report's
    asyncio.run(main())


def test_bad_input_carries_bad_request_field_violations(make_config):
    from jitagent.protocol.sdk import violations_of

    async def main():
        async with running(make_config()) as (server, client):
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await client.synthesize(["ok", " "])
            assert violations_of(err.value) == [("tasks[1].prompt", "must not be empty")]
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await client.stub.ReportOutcome(pb.ReportOutcomeRequest(run_id="r"))
            assert violations_of(err.value) == [("reward", "required: a number in [0, 1]")]
    asyncio.run(main())


def test_a_client_deadline_is_counted_and_logged_as_deadline_exceeded(make_config, caplog):
    from jitagent.config.paths import open_bank
    from jitagent.harness.seeds import seed_bank
    from jitagent.models.scripted import ScriptedModel, instant_model
    from jitagent.solving.pipeline import JitPipeline

    class Slow(ScriptedModel):
        async def complete(self, messages, **kw):
            await asyncio.sleep(60)

    def slow_solver(config):
        bank = open_bank(config.data_dir / "bank.db")
        seed_bank(bank)
        return JitPipeline(bank, instant_model(), Slow(["never"]), config.pipeline)

    async def main():
        async with running(make_config(), build=slow_solver) as (server, client):
            await asyncio.wait_for(server.ready.wait(), 120)
            with pytest.raises(grpc.aio.AioRpcError) as err:
                [e async for e in client.solve("Write a haiku.", timeout=1.0)]
            assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            # the client sees the deadline first; the server's handler counts it when it ends (a loaded
            # machine may take seconds)
            counted = server.metrics.requests.labels("Solve", "DEADLINE_EXCEEDED")._value
            for _ in range(300):
                if counted.get():
                    break
                await asyncio.sleep(0.1)
            assert await until_idle(server) == 0  # the slow call was stopped, not left running
            return counted.get()
    with caplog.at_level(logging.WARNING, logger="jitagent.server"):
        assert asyncio.run(main()) == 1
    ended = [json.loads(r.getMessage()) for r in caplog.records if '"rpc_failed"' in r.getMessage()]
    assert ended and ended[0]["code"] == "DEADLINE_EXCEEDED" and "deadline" in ended[0]["error"]


def test_a_second_server_on_a_used_port_is_refused(make_config):
    from jitagent.doors.server import JitAgentServer, StartupError

    async def main():
        config = make_config()
        async with running(config, build=lambda c: None) as (server, _):
            second = JitAgentServer(config.model_copy(update={"port": server.port}), build=lambda c: None)
            in_use = f"cannot listen on 127.0.0.1:{server.port}: the port is in use"
            with pytest.raises(StartupError, match=in_use):
                await second.start()
    asyncio.run(main())
