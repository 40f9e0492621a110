"""Red team, issue 27: every untrusted program a run or a synthesis starts — the task's check, a smoke call
of a `code` section — runs on the time left of the budget that asked for it, never on a wall limit of its
own on top of it. Scaled down: a 3 s budget against programs that sleep 20 s."""

from __future__ import annotations

import asyncio
import json
import time

from jitagent.harness.seeds import load_seeds
from jitagent.improvement.synthesis.synthesize import SynthesisConfig, Synthesizer
from jitagent.models.base import CancelToken
from jitagent.models.scripted import ScriptedModel
from jitagent.runtime.agent import Runtime
from jitagent.tasks.task import Task

BUDGET_S = 3.0
SLACK_S = 2.0  # a sandbox's start and stop on a loaded machine
SEEDS = load_seeds()


def elapsed(coroutine) -> tuple[float, object]:
    start = time.monotonic()
    value = asyncio.run(coroutine)
    return time.monotonic() - start, value


def test_a_tasks_check_runs_on_the_time_left_of_the_runs_budget():
    for verifier in ({"kind": "shell_check", "command": "sleep 20"},
                     {"kind": "python_tests", "tests": "import time; time.sleep(20)"}):
        task = Task(id="t", prompt="Say anything.", verifier=verifier)
        solver = ScriptedModel(["Final answer: 5"])
        seconds, result = elapsed(Runtime(solver).run(SEEDS["direct"], task,
                                                      deadline=time.monotonic() + BUDGET_S))
        assert seconds <= BUDGET_S + SLACK_S, (verifier["kind"], seconds)
        assert result.passed is False, result.verdict


def test_a_tasks_check_runs_on_the_time_left_of_a_callers_cancel_token():
    """The server passes the client's deadline on the cancel token, not as `deadline`."""
    task = Task(id="t", prompt="Say anything.", verifier={"kind": "shell_check", "command": "sleep 20"})
    run = Runtime(ScriptedModel(["Final answer: 5"])).run(SEEDS["direct"], task,
                                                          cancel=CancelToken(time.monotonic() + BUDGET_S))
    seconds, result = elapsed(run)
    assert seconds <= BUDGET_S + SLACK_S and result.passed is False, (seconds, result.verdict)


def test_synthesis_smoke_calls_of_code_sections_run_on_the_time_left_of_the_synthesis():
    """Three candidates with a slow `answer` section each: 3 x 5 s of smoke calls without the deadline."""
    data = SEEDS["direct"].model_dump(mode="json")
    data["code"] = {"stage": "answer", "source": "import time\n\ndef extract_answer(text):\n"
                                                 "    time.sleep(20)\n    return text\n"}
    meta = ScriptedModel([json.dumps({"spec": data})], "scripted-meta")
    config = SynthesisConfig(n=3, repair_rounds=0, dry_run=False)
    task = Task(id="t", prompt="What is 17 * 23?")
    synthesis = Synthesizer(meta, None, config).synthesize(task, [SEEDS["direct"]], {},
                                                           cancel=CancelToken(time.monotonic() + BUDGET_S))
    seconds, result = elapsed(synthesis)
    assert seconds <= BUDGET_S + SLACK_S, seconds
    assert len(result.candidates) == 3 and not any(c.valid for c in result.candidates)
