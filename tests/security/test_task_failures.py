"""Red team, issue 22, through a real gRPC server: what a task does to its workspace is that task's
failure — a tool error in its run — never the server's. `Solve` answers OK, a `StreamTasks` of four
such tasks ends with four results, and no message shows where the workspace lies on the host."""

from __future__ import annotations

import asyncio
import json

import pytest

from harness_bank.router import RouterConfig
from jitagent.config.paths import open_bank
from jitagent.doors.server import ServerConfig
from jitagent.harness.seeds import seed_bank
from jitagent.improvement.synthesis.synthesize import SynthesisConfig
from jitagent.models.scripted import ScriptedModel
from jitagent.sandbox.host import is_root
from jitagent.sandbox.launch import WORKSPACES, bwrap_works
from jitagent.solving.config import PipelineConfig
from jitagent.solving.pipeline import JitPipeline
from jitagent.tasks.task import Task

from ..jitagent.doors.conftest import free_port, running

# the meta-model's edit: a ReAct harness with the tools the scripts below call
EDIT = json.dumps({"parent": "react", "action": "react", "answer_from": "text", "planning": "none",
                   "tools": ["python", "read_file", "list_dir", "final_answer"], "max_steps": 5})
SYMLINK_LOOP = [("", "python", "import os; os.symlink('loop', 'loop'); print('made')"),
                ("made", "read_file", "loop")]
DEPTH = 1500
DEEP_TREE = [("", "python", f"import os\nfor top in ('/tmp/ws', '/tmp'):\n    os.chdir(top)\n"
                            f"    for _ in range({DEPTH}):\n        os.mkdir('d'); os.chdir('d')\n"
                            "print('built')"),
             ("built", "list_dir", "d")]


DEEP_TREE_NEEDS = pytest.mark.skipif(not (is_root() or bwrap_works()),
                                     reason="a run has /tmp/ws and its own /tmp only with bwrap or as root")


def solver(script: list[tuple[str, str, str]]) -> ScriptedModel:
    """Each step's tool call once the last observation shows the step before it done; then the answer."""
    def reply(messages: list[dict]) -> str:
        last = messages[-1]["content"] if messages[-1]["role"] == "user" else ""
        if last.startswith("Observation:"):
            step = next((i for i, (after, _, _) in enumerate(script) if after and after in last), None)
            if step is None:
                return "Thought: that was the last step.\nAction: final_answer\nAction Input: done"
        else:
            step = 0
        _, tool, argument = script[step]
        return f"Thought: next step.\nAction: {tool}\nAction Input: {argument}"
    return ScriptedModel(reply)


def server_config(tmp_path) -> ServerConfig:
    return ServerConfig(port=free_port(), data_dir=tmp_path / "data",
                        pipeline=PipelineConfig(synthesis=SynthesisConfig(n=1, dry_run=False),
                                                router=RouterConfig(references=13)))  # react among them


def build(script):
    def pipeline(config: ServerConfig) -> JitPipeline:
        bank = open_bank(config.data_dir / "bank.db")
        seed_bank(bank)
        return JitPipeline(bank, ScriptedModel([EDIT], "scripted-meta"), solver(script), config.pipeline)
    return pipeline


@pytest.mark.parametrize("script, tool, expected", [
    (SYMLINK_LOOP, "read_file", "error: read_file: 'loop' is a symbolic link"),
    pytest.param(DEEP_TREE, "list_dir", "d/", marks=DEEP_TREE_NEEDS),
], ids=["symlink-loop", "deep-tree"])
def test_solve_answers_ok_with_the_tool_error_in_the_run(tmp_path, script, tool, expected):
    async def main():
        async with running(server_config(tmp_path), build=build(script)) as (server, client):
            await asyncio.wait_for(server.ready.wait(), 120)
            events = [e async for e in client.solve(Task(id="t", prompt="Look around the workspace."))]
            return events, await client.health()
    events, health = asyncio.run(main())
    result, steps = events[-1].result, [e.step for e in events if e.HasField("step") and e.step.tool]
    assert health == "SERVING" and result.answer == "done" and not result.error
    assert [s for s in steps if s.tool == tool and s.text.startswith(expected)], steps
    assert not any(str(WORKSPACES) in s.text for s in steps)


@pytest.mark.parametrize("script", [SYMLINK_LOOP, pytest.param(DEEP_TREE, marks=DEEP_TREE_NEEDS)],
                         ids=["symlink-loop", "deep-tree"])
def test_a_stream_of_four_such_tasks_ends_with_four_results(tmp_path, script):
    tasks = [Task(id=f"t{i}", prompt=f"Look around the workspace, take {i}.") for i in range(4)]

    async def main():
        async with running(server_config(tmp_path), build=build(script)) as (server, client):
            await asyncio.wait_for(server.ready.wait(), 120)
            return [r async for r in client.stream(tasks)]
    responses = asyncio.run(main())
    assert [r.sequence for r in responses] == [0, 1, 2, 3]
    assert all(r.HasField("result") and r.result.answer == "done" for r in responses), \
        [r.error.message for r in responses]
