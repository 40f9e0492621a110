"""Vote kinds: one answer from the samples' answers."""

import asyncio
from types import SimpleNamespace

from jitagent.harness.spec import ActionSpec
from jitagent.runtime.voting import Vote


def choose(kind: str, answers: list[str], judge_says: str = "") -> tuple[str, list[dict]]:
    """The vote's choice, and what the judge was asked."""
    asked = []

    async def ask(prompt, max_tokens, **fields):
        asked.append({"prompt": prompt, **fields})
        return judge_says
    vote = Vote.kinds[kind](ActionSpec(vote=kind, samples=len(answers)))
    run = SimpleNamespace(ask=ask, task=SimpleNamespace(prompt="task"))
    return asyncio.run(vote.choose(run, answers)), asked


def test_majority_counts_numbers_and_case_as_one_answer_and_keeps_the_first_spelling():
    assert choose("majority", ["Paris", "5.0", "5", "paris.", "5"]) == ("5.0", [])


def test_the_judge_picks_by_number_among_differing_answers():
    chosen, asked = choose("judge", ["4", "5", "6"], judge_says="Candidate 2.")
    assert chosen == "5" and asked == [{"prompt": "judge", "task": "task", "candidates": "1. 4\n2. 5\n3. 6"}]


def test_a_judge_that_names_no_candidate_leaves_the_first_and_one_answer_needs_no_judge():
    assert choose("judge", ["4", "5"], judge_says="7")[0] == "4"
    assert choose("judge", ["5", "5"], judge_says="2") == ("5", [])
