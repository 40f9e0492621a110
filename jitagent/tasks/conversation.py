"""A conversation as a task's text, the same through every door: one user turn is its text; more are
each `role: text`, with the calls of the client's functions an assistant made and the results the client
sent back among them. A run that paused at a call goes on from this text (no state is held between turns),
so the same conversation is the same task, whichever door it came through."""

from __future__ import annotations

import json
import re

CALLED = re.compile(r"\bcalled ([A-Za-z_][\w.-]*)\(\s*")
RETURNED = re.compile(r"^(?:tool: )?[A-Za-z_][\w.-]* returned: ", re.M)  # a result on a line of its own
TURNS = "\n\n"  # between a transcript's turns
USER_TURN = f"{TURNS}user: "


def called(name: str, arguments: str) -> str:
    """An assistant's call as the text shows it (`arguments`: its JSON)."""
    return f"called {name}({arguments})"


def calls_written(text: str) -> list[tuple[str, object]]:
    """The calls `text` writes in `called`'s notation, each (name, arguments)."""
    decoder, calls = json.JSONDecoder(), []
    for match in CALLED.finditer(text):
        try:
            arguments, end = decoder.raw_decode(text, match.end())
        except (ValueError, RecursionError):
            continue
        if text[end:].lstrip(" ").startswith(")"):
            calls.append((match.group(1), arguments))
    return calls


def before_results(text: str) -> str:
    """`text` up to the first line that shows a result in `returned`'s notation."""
    result = RETURNED.search(text)
    return text[:result.start()] if result else text


def this_turn(text: str) -> str:
    """A transcript from its last user turn on: what was called since the user last spoke."""
    return text[text.rfind(USER_TURN) + len(TURNS):] if USER_TURN in text else text


def returned(name: str, result: str) -> str:
    return f"{name} returned: {result}"


def transcript(turns: list[tuple[str, str]]) -> str:
    """(role, text) turns as the task's text; empty turns are left out."""
    if len(turns) == 1 and turns[0][0] == "user":
        return turns[0][1]
    return TURNS.join(f"{role}: {text}" for role, text in turns if text)
