"""Whether a seed's greedy run of a task depends on the request the embedded model served just before it.

    python bench/prefix_cache.py --seed codeact --task workspace-008 --before text-016 workspace-004 -

Runs the seed on the task after each `--before` task (`-`: no other task in between) with one model
instance, as a server or a bench does between units. The prompt is the same each time (its token
count is printed); llama.cpp reuses the cached prefix the previous prompt shares with it, and the
answer may change with that reuse. Prints one JSON line per run.
"""

import argparse
import asyncio
import json

from jitagent.cli.options import META_MODEL
from jitagent.harness.seeds import load_seeds
from jitagent.models import load_model
from jitagent.runtime.agent import Runtime
from jitagent.tasks.task import load_suite


async def probe(args: argparse.Namespace) -> None:
    runtime = Runtime(load_model(args.model, slot="solver"))
    seed = load_seeds()[args.seed]
    tasks = {t.id: t for t in load_suite(args.suite)}
    for before in args.before:
        if before != "-":
            await runtime.run(seed, tasks[before], seed=0)
        run = await runtime.run(seed, tasks[args.task], seed=0)
        reply = next(m["content"] for m in run.trajectory.messages if m["role"] == "assistant")
        print(json.dumps({"before": before, "reward": run.reward, "prompt_tokens": run.cost.prompt_tokens,
                          "first_reply": reply}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", default="codeact")
    parser.add_argument("--task", default="workspace-008")
    parser.add_argument("--before", nargs="+", default=["text-016", "workspace-004", "-"])
    parser.add_argument("--suite", default="starter")
    parser.add_argument("--model", default=META_MODEL)
    asyncio.run(probe(parser.parse_args()))


if __name__ == "__main__":
    main()
