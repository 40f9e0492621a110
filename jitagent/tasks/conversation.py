"""A conversation as a task's text, the same through every door: one user turn is its text; more are
each `role: text`, with the calls of the client's functions an assistant made and the results the client
sent back among them. A run that paused at a call goes on from this text (no state is held between turns),
so the same conversation is the same task, whichever door it came through."""

from __future__ import annotations


def called(name: str, arguments: str) -> str:
    """An assistant's call as the text shows it (`arguments`: its JSON)."""
    return f"called {name}({arguments})"


def returned(name: str, result: str) -> str:
    return f"{name} returned: {result}"


def transcript(turns: list[tuple[str, str]]) -> str:
    """(role, text) turns as the task's text; empty turns are left out."""
    if len(turns) == 1 and turns[0][0] == "user":
        return turns[0][1]
    return "\n\n".join(f"{role}: {text}" for role, text in turns if text)
