"""Token counts where unknown stays unknown: a sum with an unknown part is unknown, never a smaller number."""

from __future__ import annotations

from dataclasses import dataclass


def known_sum(*counts: float | None) -> float | None:
    """The sum of token counts (or of their means), or None when any of them is unknown."""
    return None if any(c is None for c in counts) else sum(counts)


@dataclass(frozen=True)
class Usage:
    """Token counts; None means unknown (never silently zero)."""

    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(known_sum(self.prompt_tokens, other.prompt_tokens),
                     known_sum(self.completion_tokens, other.completion_tokens))

    @property
    def total(self) -> int | None:
        return known_sum(self.prompt_tokens, self.completion_tokens)
