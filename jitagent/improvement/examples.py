"""What won, shown: a cluster's verified solutions as the examples its next task sees.

A harness asks for them in its spec (`prompts.examples`: how many, from what reward, how long at most, how
picked). Per task they are filled from the bank's verified runs of the cluster whose harness has the same
solution format (a program is shown to a program-writing harness), never the task's own run nor that of a
task with the same text; the runtime shows them in place of the spec's own few-shot pairs. Only outcomes
are sources — a run verified by its task's verifier, or reported later — and practice's tries that passed
a client's check (improvement.practice), so nothing unverified is shown.
A task's own run is recorded after it was answered, so in a stream it can only help later tasks.

A harness with examples is an arm like any other: `with_examples` derives the variant of a harness (a new
id, its parent the harness), and the router gives it traffic by the reward and tokens it earns.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from harness_bank import HarnessBank
from harness_bank.records import Solution
from jitagent.harness.spec import ExamplesSpec, HarnessSpec
from jitagent.tasks.task import Task

POOL = 256  # the cluster's most recent solutions looked at per task
DIVERSITY = 0.5  # `diverse`: the weight of likeness to the task against unlikeness to those already picked


@dataclass(frozen=True, kw_only=True)
class Shown:
    """The examples one run is shown: the runs they come from, and their messages."""

    sources: tuple[str, ...] = ()  # run ids (`outcome:N` for an outcome with no server run, e.g. a warm-up's)
    evidence: tuple[str, ...] = ()  # for each, what admitted it (Outcome.evidence; "" where unsaid)
    messages: tuple[dict, ...] = ()


NOTHING = Shown()


def with_examples(spec: HarnessSpec, settings: ExamplesSpec | None = None) -> HarnessSpec:
    """The variant of `spec` that shows its cluster's verified solutions (an arm of its own)."""
    settings = settings or ExamplesSpec()
    suffix = f"+ex{settings.k}" + ("" if settings.pick == "diverse" else f"-{settings.pick}")
    note = f"Shown first: up to {settings.k} verified solution(s) of earlier tasks of its cluster."
    return spec.variant(suffix, note, "examples",
                        lambda data: data["prompts"].update(examples=settings.model_dump(mode="json")))


def examples_for(bank: HarnessBank, spec_of: Callable[[str], HarnessSpec], spec: HarnessSpec, task: Task,
                 cluster: str) -> Shown:
    """The examples `spec` asks for on `task`, from its cluster's verified solutions of its format.
    `spec_of`: a harness id's spec (to know a solution's format)."""
    settings = spec.prompts.examples
    candidates = eligible(bank, spec_of, spec, task, cluster)
    if not candidates:
        return NOTHING
    query = bank.embedder.embed_one(task.prompt)
    chosen = pick(shortest_per_task(candidates), query, settings, random.Random(zlib.crc32(task.id.encode())))
    return Shown(sources=tuple(s.run_id or f"outcome:{s.outcome_id}" for s in chosen),
                 evidence=tuple(s.evidence or "" for s in chosen),
                 messages=tuple(m for s in chosen for m in messages_of(s)))


def eligible(bank: HarnessBank, spec_of: Callable[[str], HarnessSpec], spec: HarnessSpec, task: Task,
             cluster: str) -> list[Solution]:
    """The cluster's solutions `spec` may be shown on `task`: verified at its `min_reward`, of its format, at
    most its `max_chars`, and neither the task's own run nor one of a task with the same text."""
    settings = spec.prompts.examples
    if settings is None:
        return []
    return [s for s in bank.solutions(cluster, settings.min_reward, POOL)
            if s.task_id != task.id and s.task_text.strip() != task.prompt.strip()
            and length(s) <= settings.max_chars
            and spec_of(s.harness_id).solution_format == spec.solution_format]


def length(solution: Solution) -> int:
    return len(solution.task_text) + sum(len(turn["content"]) for turn in solution.turns)


def shortest_per_task(solutions: list[Solution]) -> list[Solution]:
    """One solution per task text, the shortest (short examples cost fewer tokens and copy less noise)."""
    kept: dict[str, Solution] = {}
    for s in solutions:
        key = s.task_text.strip()
        if key not in kept or length(s) < length(kept[key]):
            kept[key] = s
    return list(kept.values())


def pick(candidates: list[Solution], query: np.ndarray, settings: ExamplesSpec,
         rng: random.Random) -> list[Solution]:
    """`k` of the candidates: the nearest to the task, a diverse set near it (maximal marginal relevance:
    each next one near the task and unlike those picked), or random ones. Shown nearest last, nearest the
    task in the prompt."""
    k = min(settings.k, len(candidates))
    if settings.pick == "random":
        return rng.sample(candidates, k)
    vectors = np.stack([c.vector for c in candidates])
    relevance = vectors @ query
    if settings.pick == "nearest":
        order = np.argsort(-relevance, kind="stable")[:k].tolist()
    else:
        order = [int(np.argmax(relevance))]
        while len(order) < k:
            likeness = (vectors @ vectors[order].T).max(axis=1)
            score = DIVERSITY * relevance - (1 - DIVERSITY) * likeness
            score[order] = -np.inf
            order.append(int(np.argmax(score)))
    return [candidates[i] for i in reversed(order)]


def messages_of(solution: Solution) -> list[dict]:
    return [{"role": "user", "content": solution.task_text}, *solution.turns]
