"""How much of a long text goes back to the model: its head and its tail, with a line between them
saying how much was cut. What a tool printed becomes prompt, and prompt is prefill: on 2 cores the
8,000 characters of primes a program may print are thousands of tokens, longer than a run's budget."""

from __future__ import annotations

OBSERVATION_CHARS = 1200  # a tool call's output, as the next message of the action loop
ANSWER_CHARS = 300  # a sub-agent's answer, as its parent and later siblings read it; an answer reflected on


def head_and_tail(text: str, limit: int) -> str:
    """`text` if it has at most `limit` characters, else its first two thirds and last third of them."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - limit:,} characters cut ...]\n{text[-tail:]}"
