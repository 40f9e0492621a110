"""A's vote stage: one answer from the samples' answers. One class per kind."""

from __future__ import annotations

import collections
from typing import ClassVar

from jitagent.harness.spec import ActionSpec
from jitagent.runtime import parsing
from jitagent.runtime.stage import RunContext, Stage


class Vote(Stage):
    kinds: ClassVar[dict[str, type[Vote]]] = {}
    section, field = "action", "vote"
    spec: ActionSpec

    async def choose(self, run: RunContext, answers: list[str]) -> str:
        """One of `answers` (at least one)."""
        raise NotImplementedError


class Majority(Vote, kind="majority"):
    """The most common answer, numbers and case normalised; the first given among the tied."""

    async def choose(self, run: RunContext, answers: list[str]) -> str:
        counts = collections.Counter(parsing.normalize_vote(a) for a in answers)
        best = counts.most_common(1)[0][0]
        return next(a for a in answers if parsing.normalize_vote(a) == best)


class Judge(Majority, kind="judge"):
    """The model picks among answers that differ."""

    async def choose(self, run: RunContext, answers: list[str]) -> str:
        if len(set(answers)) == 1:
            return await super().choose(run, answers)
        listing = "\n".join(f"{i + 1}. {a}" for i, a in enumerate(answers))
        number = parsing.first_int(await run.ask("judge", 8, task=run.task.prompt, candidates=listing))
        return answers[number - 1] if number and 1 <= number <= len(answers) else answers[0]
