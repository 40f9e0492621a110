"""The solving layer every door stands on: readiness, one admission, one run per id, one error type.
A fake pipeline (its `stream` and its bank's `run`) stands in for the real one: what is under test is
the layer; the doors' tests run it on the real pipeline."""

import asyncio
import time

import pytest

from harness_bank.records import BankError
from harness_bank.store import StoreUnavailable
from jitagent.harness.seeds import load_seeds
from jitagent.improvement.synthesis.synthesize import SynthesisCost
from jitagent.models.base import ModelError
from jitagent.protocol.records import from_message, to_message
from jitagent.solving.access import OPERATOR, Access, Caller
from jitagent.solving.config import PipelineConfig
from jitagent.solving.events import Chosen, SolveResult
from jitagent.solving.layer import SolveError, Solving
from jitagent.solving.result import Solved
from jitagent.tasks.task import Task
from jitagent.v1 import jitagent_pb2 as pb

DIRECT = load_seeds()["direct"]
TASK = Task(id="t", prompt="What is 2 + 3?")


class FakeBank:
    def run(self, run_id):
        time.sleep(0.05)  # the bank is asked first, and answering takes a while
        raise BankError(f"no run {run_id}")


class FakePipeline:
    """Streams `Chosen` then a result after `delay`, or raises `fails`; counts the runs it started."""

    def __init__(self, delay: float = 0.05, fails: Exception | None = None):
        self.delay, self.fails, self.started, self.bank = delay, fails, 0, FakeBank()
        self.config, self.tasks = PipelineConfig(), []

    def confine(self):
        self.config.runs_code = False

    async def stream(self, task, *, run_id, **kw):
        self.started += 1
        self.tasks.append(task)
        yield Chosen(harness=DIRECT)
        await asyncio.sleep(self.delay)
        if self.fails is not None:
            raise self.fails
        yield SolveResult(task_id=task.id, route="exploit", harness=DIRECT, cluster="type:t", synthesis=None,
                          run=None, references=[], synthesis_cost=SynthesisCost(), wall_s=0.1, run_id=run_id)


def events(solving, **kw):
    async def collect():
        return [e async for e in solving.events(TASK, **kw)]
    return collect()


def test_two_calls_under_one_id_at_once_start_one_run_and_a_later_one_gets_its_result():
    pipeline = FakePipeline()
    solving = Solving(pipeline)

    async def main():
        first, second = await asyncio.gather(events(solving, run_id="job-8", replay=True),
                                             events(solving, run_id="job-8", replay=True))
        assert first == second and pipeline.started == 1
        assert await events(solving, run_id="job-8", replay=True) == first[-1:]  # its result, remembered
        assert pipeline.started == 1
        await events(solving)  # no id: a new run
        assert pipeline.started == 2
    asyncio.run(main())


def test_a_call_before_the_pipeline_is_loaded_is_told_so():
    solving = Solving()
    with pytest.raises(SolveError) as loading:
        asyncio.run(events(solving))
    assert loading.value.kind == "loading"
    solving.load_error = "the bank's folder is not writable"
    with pytest.raises(SolveError, match="could not start: the bank's folder") as failed:
        asyncio.run(events(solving))
    assert failed.value.kind == "loading"


@pytest.mark.parametrize("raised, kind", [
    (ModelError("refused"), "model"), (StoreUnavailable("down"), "bank"), (KeyError("a bug"), "internal")])
def test_what_stops_a_run_is_one_error_with_its_kind(raised, kind, caplog):
    with pytest.raises(SolveError) as failed:
        asyncio.run(events(Solving(FakePipeline(fails=raised))))
    assert failed.value.kind == kind
    if kind == "internal":  # a bug: logged whole, told without its text
        assert "a bug" not in str(failed.value) and "task_crashed" in caplog.text


def test_admission_is_one_count_for_every_door():
    solving = Solving(FakePipeline(delay=0.3), concurrency=1, max_queue=1, max_concurrent=2)

    async def main():
        with solving.admitted(), solving.admitted():
            with pytest.raises(SolveError, match="--max-concurrent 2") as busy, solving.admitted():
                pass
            assert busy.value.kind == "busy"
        working = asyncio.create_task(events(solving))
        waiting = asyncio.create_task(events(solving))
        while solving.waiting < 1:
            await asyncio.sleep(0.01)
        with pytest.raises(SolveError, match="queue full") as full:
            await events(solving)
        assert full.value.kind == "busy"
        await asyncio.gather(working, waiting)
    asyncio.run(main())


def test_a_run_past_its_deadline_is_stopped():
    solving = Solving(FakePipeline(delay=5.0))

    async def main():
        stream = solving.events(TASK, deadline=time.monotonic() + 0.1)
        assert isinstance(await anext(stream), Chosen)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(anext(stream), 0.3)
    asyncio.run(main())


def test_a_bad_request_id_is_refused_before_any_work_and_a_good_one_names_a_run_in_the_callers_tenant():
    pipeline = FakePipeline()
    solving = Solving(pipeline)
    with pytest.raises(SolveError) as bad:
        solving.name_run("no spaces", OPERATOR)
    assert bad.value.kind == "bad_request" and bad.value.violations[0][0] == "request_id"
    assert pipeline.started == 0
    assert solving.name_run("r1", OPERATOR) == ("r1", True)  # one token or none: ids as named
    tenants = Solving(pipeline, access=Access(tenanted=True))
    assert tenants.name_run("r1", Caller(tenant="team-a", role="client")) == ("team-a:r1", True)
    new, replay = tenants.name_run("", Caller(tenant="team-a", role="client"))
    assert new.startswith("team-a:") and not replay


def test_the_flat_record_goes_on_the_wire_and_back_by_field_name():
    result = SolveResult(task_id="t", route="explore", harness=DIRECT, cluster="type:t", synthesis=None,
                         run=None, references=[], synthesis_cost=SynthesisCost(), wall_s=1.5, run_id="r",
                         examples=("a", "b"))
    solved = result.solved()
    message = to_message(solved, pb.SolveResult())
    assert message.route == pb.ROUTE_EXPLORE and message.harness_name == "direct"
    assert not message.HasField("answer") and not message.HasField("reward")  # unknown stays absent
    assert from_message(Solved, message) == solved


def test_where_runs_cannot_be_confined_code_verifiers_are_refused_and_code_tools_taken_out(monkeypatch):
    """Not root, or no bwrap: a run would be the server's own uid, able to read its secrets (issue 45)."""
    monkeypatch.setattr("jitagent.solving.layer.confined", lambda: False)
    environ = {"kind": "shell_check", "command": "cat /proc/1/environ"}
    checked = Task(id="c", prompt="Say hi.", verifier=environ)
    plain = Task(id="p", prompt="What is 2 + 3?", tools=["python", "read_file"])

    async def main(solving: Solving) -> None:
        [e async for e in solving.events(plain)]
        [e async for e in solving.events(checked)]

    pipeline = FakePipeline()
    with pytest.raises(SolveError) as err:
        asyncio.run(main(Solving(pipeline)))
    assert err.value.kind == "precondition" and "its verifier (shell_check) runs code" in str(err.value)
    assert [t.tools for t in pipeline.tasks] == [["read_file"]] and not pipeline.config.runs_code
    allowed = FakePipeline()
    asyncio.run(main(Solving(allowed, allow_unconfined=True)))  # the operator said so
    assert [t.tools for t in allowed.tasks] == [["python", "read_file"], None] and allowed.config.runs_code
