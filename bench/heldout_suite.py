"""A suite of task types none of the project's suites contain: reasoning_gym generators drawn at random.

Every claim about the product is checked on types nobody tuned for. This draws `--types` generators
from reasoning_gym's registry, leaving out the ones the built-in `reasoning_gym` suite uses, keeping
those whose questions are short enough for a 4,096-token context and whose entries generate quickly,
and writes learn/score/final tasks for each, scored by the generator's own checker.

Usage: python bench/heldout_suite.py OUT.jsonl [--types 12] [--draw 0] [--sizes 8 4 4] [--exclude SUITE ...]
(`--exclude`: also leave out the types of earlier drawn suites, so a fresh draw is a fresh check)
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import zlib
from pathlib import Path

from jitagent.tasks.suites.external import GYM_GENERATORS, GYM_SPLIT_SEEDS, _gym_dataset
from jitagent.tasks.task import Task, load_suite

MAX_PROMPT_CHARS = 1500  # the question and a reply must fit the solver's context with room to work
MAX_ANSWER_CHARS = 300
MAX_GENERATE_S = 5.0


def usable(name: str) -> bool:
    """The generator makes short questions with short answers, quickly, and scores its own answer 1."""
    try:
        start = time.monotonic()
        dataset = _gym_dataset(name, 1, 4)
        entries = [dataset[i] for i in range(4)]
        if time.monotonic() - start > MAX_GENERATE_S:
            return False
        return all(len(e["question"]) <= MAX_PROMPT_CHARS and e["answer"] is not None
                   and len(str(e["answer"])) <= MAX_ANSWER_CHARS
                   and dataset.score_answer(answer=str(e["answer"]), entry=e) == 1.0 for e in entries)
    except Exception:  # a generator that needs more (data, options) than this draw gives it
        return False


def draw(types: int, draw_seed: int, excluded: set[str]) -> list[str]:
    from reasoning_gym.factory import DATASETS

    pool = sorted(set(DATASETS) - set(GYM_GENERATORS) - excluded)
    random.Random(draw_seed).shuffle(pool)
    chosen = []
    for name in pool:
        if len(chosen) == types:
            break
        if usable(name):
            chosen.append(name)
        print(f"  {name}: {'kept' if chosen and chosen[-1] == name else 'left out'}", file=sys.stderr)
    return chosen


def tasks_for(name: str, sizes: dict[str, int]) -> list[Task]:
    tasks = []
    for split, size in sizes.items():
        seed = GYM_SPLIT_SEEDS[split] + zlib.crc32(name.encode()) % 1000
        for index, entry in enumerate(_gym_dataset(name, seed, size)):
            verifier = {"kind": "reasoning_gym", "dataset": name, "seed": seed, "size": size, "index": index}
            tasks.append(Task(id=f"ho-{name}-{split}-{index}", prompt=entry["question"], type=name,
                              split=split, tags=["heldout"], verifier=verifier))
    return tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--types", type=int, default=12, help="generators to draw")
    parser.add_argument("--draw", type=int, default=0, help="seed of the draw")
    parser.add_argument("--sizes", type=int, nargs=3, default=[8, 4, 4], metavar=("LEARN", "SCORE", "FINAL"))
    parser.add_argument("--exclude", nargs="*", default=[], metavar="SUITE",
                        help="suites (a name or a JSONL file) whose types are left out")
    args = parser.parse_args()
    try:
        excluded = {task.type for suite in args.exclude for task in load_suite(suite)}
    except (OSError, ValueError) as exc:
        sys.exit(f"heldout_suite: --exclude: {exc}")
    names = draw(args.types, args.draw, excluded)
    sizes = dict(zip(("learn", "score", "final"), args.sizes))
    lines = [task.model_dump_json(exclude_defaults=True) for name in names for task in tasks_for(name, sizes)]
    args.out.write_text("\n".join(lines) + "\n")
    print(json.dumps({"types": names, "tasks": len(lines), "sizes": sizes}))


if __name__ == "__main__":
    main()
