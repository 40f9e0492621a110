"""One action loop's conversation, and what an attempt at the task came to: the state the agent loop and
its stages pass each other (they import it from here, the run from nowhere)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Attempt:
    answer: str | None
    failure: str | None = None  # what went wrong, for a reflection


@dataclass
class Conversation:
    """One action loop: its messages, and what its stages keep from step to step."""

    prompt: str
    depth: int
    seed: int
    lesson: str = ""  # the reflection on a failed earlier attempt
    plan: str = ""
    history: list[dict] = field(default_factory=list)  # the task message first
    notes: list[str] = field(default_factory=list)  # the model's `NOTE:` lines
    summary: str = ""
    observation: str = ""  # the last tool call's output
    stdout: str = ""  # the last program's
    reply: str = ""  # the model's last
    tool_failed: bool = False
    step: int = 0

    def hear(self, reply: str) -> None:
        self.reply = reply
        self.history.append({"role": "assistant", "content": reply})
        self.notes += [line.split(":", 1)[1].strip() for line in reply.splitlines()
                       if line.upper().startswith("NOTE:")]

    def tell(self, text: str) -> None:
        self.history.append({"role": "user", "content": text})
