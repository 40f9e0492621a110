"""A behaviour fingerprint of the runtime and the pipeline, to show a refactor changed nothing.

Every seed runs on a fixed set of tasks with a deterministic scripted model whose reply depends only on
what it is asked (so a changed prompt changes every later reply), and a scripted pipeline streams tasks
through a fresh bank (routing, synthesis, repair, recording). Every model call (messages, temperature,
seed, stop, max_tokens, schema) and every event (wall times and random ids left out) is written as one
JSON line. Two runs of the same code give the same file; compare a refactor's with `diff` or `--compare`.

Usage: python bench/golden.py OUT.jsonl [--compare BEFORE.jsonl]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import json
import sys
import tempfile
from pathlib import Path

from jitagent.common.usage import Usage
from jitagent.harness.seeds import load_seeds
from jitagent.models.base import Generation
from jitagent.runtime.agent import Runtime
from jitagent.tasks.task import load_suite

SCRIPTED_TASKS = 2  # per type of the starter suite's score split, and per reasoning_gym generator
VOLATILE = {"wall_s", "run_id", "since", "created_at"}  # differ from run to run, whatever the code


def reply_for(messages: list[dict], schema: dict | None) -> str:
    """A reply chosen by a digest of the request: code, a final answer, a tool call, a plan, a number."""
    key = int(hashlib.sha256(json.dumps([messages, schema], sort_keys=True).encode()).hexdigest(), 16)
    if schema is not None:
        from jitagent.models.scripted import schema_example

        return json.dumps(schema_example(schema))
    return [
        "```python\nprint(6 * 7)\n```",
        "Thought: compute\nAction: python\nAction Input: print(2 + 2)",
        "1. Find the numbers\n2. Add them",
        "Final answer: 42",
        "CORRECT, it checks out",
        "```python\ndef solve(x):\n    return x\nprint(solve(3))\n```",
        "2",
        "NOTE: keep going\nFinal answer: done",
    ][key % 8]


class RecordingModel:
    """The scripted model, keeping every call as the golden file sees it."""

    name = "golden-scripted"

    def __init__(self, log: list[dict]):
        self.log = log

    async def complete(self, messages, *, max_tokens=256, temperature=0.0, seed=None, stop=None,
                       json_schema=None, n=1, cancel=None, tools=None) -> Generation:
        self.log.append({"call": {"messages": messages, "max_tokens": max_tokens, "temperature": temperature,
                                  "seed": seed, "stop": stop, "schema": json_schema, "n": n,
                                  **({"tools": tools} if tools else {})}})
        texts = []
        for i in range(n):
            text = reply_for(messages + [{"role": "n", "content": str(i)}] if i else messages, json_schema)
            for s in stop or []:
                text = text.split(s)[0] if s in text else text
            texts.append(text)
        prompt = sum(len(m["content"].split()) for m in messages)
        return Generation(texts, Usage(prompt * n, sum(len(t.split()) for t in texts)), 0.0, self.name,
                          ["stop"] * n)


def plain(value):
    """An event as JSON: dataclasses and pydantic models as dicts, volatile fields dropped."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        data = {"type": type(value).__name__}
        data.update({f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)
                     if f.name not in VOLATILE})
        return data
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, float):
        return round(value, 6)
    return value


def tasks() -> list:
    chosen = []
    for suite, split in (("starter", "score"), ("reasoning_gym", "score")):
        seen: dict[str, int] = {}
        for task in load_suite(suite, split):
            if seen.get(task.type, 0) < SCRIPTED_TASKS:
                seen[task.type] = seen.get(task.type, 0) + 1
                chosen.append(task)
    return chosen


async def runtime_lines(log: list[dict]) -> None:
    runtime = Runtime(RecordingModel(log))
    for name, spec in load_seeds().items():
        for task in tasks():
            log.append({"run": name, "task": task.id})
            async for event in runtime.stream(spec, task, seed=7):
                log.append({"event": plain(event)})


async def pipeline_lines(log: list[dict]) -> None:
    from jitagent.solving.assembly import pipeline_on
    from jitagent.solving.config import PipelineConfig

    with tempfile.TemporaryDirectory() as folder:
        model = RecordingModel(log)
        pipeline = pipeline_on(Path(folder) / "bank.db", model, model, PipelineConfig())
        for task in tasks():
            log.append({"solve": task.id})
            async for event in pipeline.stream(task, seed=3):
                log.append({"event": plain(event)})
        pipeline.bank.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--compare", type=Path, help="a golden file of the code before")
    args = parser.parse_args()
    log: list[dict] = []
    asyncio.run(runtime_lines(log))
    asyncio.run(pipeline_lines(log))
    lines = [json.dumps(item, sort_keys=True, default=str) for item in log]
    args.out.write_text("\n".join(lines) + "\n")
    calls = sum('"call"' in line[:10] for line in lines)
    print(f"{len(lines)} lines, {calls} model calls -> {args.out}")
    if args.compare:
        before = args.compare.read_text().splitlines()
        first = next((i for i, (a, b) in enumerate(zip(before, lines)) if a != b), None)
        if first is None and len(before) == len(lines):
            print("identical to", args.compare)
            return
        where = first if first is not None else min(len(before), len(lines))
        print(f"differs from {args.compare} at line {where + 1} (of {len(before)} before, {len(lines)} now)")
        sys.exit(1)


if __name__ == "__main__":
    main()
