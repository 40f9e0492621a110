"""All the seed harnesses on a suite split, for one or more embedded models.

Writes bench/out/seeds_<model>.json, prints a markdown table and draws bench/out/seeds.png.
Usage: python bench/seed_table.py --suite starter --split score --models qwen2.5-coder-0.5b smollm2-135m
"""

import argparse
import asyncio
import json
import platform
import time
from datetime import date
from pathlib import Path

from jitagent.harness.seeds import load_seeds
from jitagent.models import load_model
from jitagent.runtime.agent import Runtime
from jitagent.runtime.evaluate import run_tasks, summarize
from jitagent.tasks.task import load_suite

OUT = Path(__file__).parent / "out"


async def bench_model(model_name: str, tasks) -> list[dict]:
    runtime = Runtime(load_model(model_name))
    rows = []
    for spec in load_seeds().values():
        results = await run_tasks(runtime, spec, tasks)
        row = summarize(spec.name, results).to_dict()
        row["per_type"] = {}
        for r, t in zip(results, tasks):
            row["per_type"].setdefault(t.type, []).append(r.reward)
        row["per_type"] = {k: sum(v) / len(v) for k, v in row["per_type"].items()}
        rows.append(row)
        print(f"{model_name:20s} {spec.name:20s} success {row['success_rate']:.1%} tokens "
              f"{row['mean_tokens']} wall {row['mean_wall_s']:.2f}s", flush=True)
    return rows


def markdown(model_name: str, rows: list[dict]) -> str:
    types = sorted({k for r in rows for k in r["per_type"]})
    head = "| seed | success | " + " | ".join(types) + " | mean tokens | mean wall s |\n"
    head += "|---|---|" + "---|" * len(types) + "---|---|\n"
    body = "".join(f"| {r['harness']} | {r['success_rate']:.1%} | "
                   + " | ".join(f"{r['per_type'].get(t, 0):.0%}" for t in types)
                   + f" | {r['mean_tokens']:.0f} | {r['mean_wall_s']:.2f} |\n" for r in rows)
    return f"**{model_name}**\n\n" + head + body


def plot(all_rows: dict[str, list[dict]]) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4.5))
    names = [r["harness"] for r in next(iter(all_rows.values()))]
    width = 0.8 / len(all_rows)
    for i, (model, rows) in enumerate(all_rows.items()):
        ax.bar([x + i * width for x in range(len(names))], [r["success_rate"] * 100 for r in rows], width,
               label=model)
    ax.set_xticks([x + width * (len(all_rows) - 1) / 2 for x in range(len(names))], names, rotation=45,
                  ha="right")
    ax.set_ylabel("success on split (%)")
    ax.set_title("Seed harnesses on the starter suite")
    ax.legend()
    fig.tight_layout()
    path = OUT / "seeds.png"
    fig.savefig(path, dpi=110)
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--suite", default="starter")
    parser.add_argument("--split", default="score")
    parser.add_argument("--models", nargs="+", default=["qwen2.5-coder-0.5b", "smollm2-135m"])
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    tasks = load_suite(args.suite, args.split)
    all_rows = {}
    for model in args.models:
        start = time.monotonic()
        all_rows[model] = asyncio.run(bench_model(model, tasks))
        (OUT / f"seeds_{model}.json").write_text(json.dumps(all_rows[model], indent=2))
        print(f"{model}: {time.monotonic() - start:.0f}s")
    print(f"\n{date.today()} on {platform.node()} ({len(tasks)} tasks, {args.suite}/{args.split})\n")
    for model, rows in all_rows.items():
        print(markdown(model, rows))
    print(plot(all_rows))


if __name__ == "__main__":
    main()
