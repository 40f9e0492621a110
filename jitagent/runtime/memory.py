"""M: memory, what of an action loop's history the model sees at each step. One class per kind."""

from __future__ import annotations

import collections
import re
from typing import ClassVar

from jitagent.harness.spec import HarnessSpec, MemorySpec
from jitagent.runtime.conversation import Conversation
from jitagent.runtime.events import Step
from jitagent.runtime.stage import RunContext, Stage

CLIP = 400  # characters of one older message that a summary or a recall reads


class Memory(Stage):
    """The base keeps the whole history."""

    kinds: ClassVar[dict[str, type[Memory]]] = {}
    section = "memory"
    spec: MemorySpec

    @classmethod
    def for_spec(cls, spec: HarnessSpec) -> Memory:
        if spec.code_for("memory") is not None:
            return CodeMemory(spec.memory)
        return super().for_spec(spec)

    async def fold(self, run: RunContext, talk: Conversation) -> None:
        """Before a step: compact the history for good."""

    async def view(self, run: RunContext, talk: Conversation) -> list[dict]:
        """The messages the model sees this step, the task message first."""
        return talk.history


class Full(Memory, kind="full"):
    """Everything said so far."""


class Window(Memory, kind="window"):
    """The task and the last `window` messages."""

    async def view(self, run: RunContext, talk: Conversation) -> list[dict]:
        return recent(talk.history, self.spec.window)


class Notes(Memory, kind="notes"):
    """The window, and under the task every `NOTE:` line the model wrote."""

    async def view(self, run: RunContext, talk: Conversation) -> list[dict]:
        view = recent(talk.history, self.spec.window)
        if not talk.notes:
            return view
        return under_task(view, "Your notes:\n" + "\n".join(f"- {note}" for note in talk.notes))


class Summary(Memory, kind="summary"):
    """Every `every` steps all but the last turn fold into a running summary, shown under the task."""

    async def fold(self, run: RunContext, talk: Conversation) -> None:
        history = talk.history
        if not (talk.step and talk.step % self.spec.every == 0 and len(history) > 3):
            return
        older = "\n".join(f"{m['role']}: {m['content'][:CLIP]}" for m in history[1:-2])
        part = "user_with_summary" if talk.summary else "user"
        talk.summary = await run.ask("summarize", self.spec.budget, part, summary=talk.summary, history=older)
        del history[1:-2]
        run.trajectory.events.append(Step(kind="memory", text=talk.summary, step=talk.step))  # not streamed

    async def view(self, run: RunContext, talk: Conversation) -> list[dict]:
        if not talk.summary:
            return talk.history
        return under_task(talk.history, f"Summary of earlier steps:\n{talk.summary}")


class Retrieval(Memory, kind="retrieval"):
    """The window, and under the task the older messages most relevant to the current step (those sharing
    the most, and the rarest, words with the task and the latest message), up to `budget` words, in the
    order they came."""

    async def view(self, run: RunContext, talk: Conversation) -> list[dict]:
        view = recent(talk.history, self.spec.window)
        older = talk.history[1:][: -self.spec.window]
        recalled = self.recall(older, f"{talk.prompt}\n{talk.history[-1]['content']}")
        if not recalled:
            return view
        lines = "\n".join(f"{m['role']}: {m['content'][:CLIP]}" for m in recalled)
        return under_task(view, f"Relevant earlier messages:\n{lines}")

    def recall(self, older: list[dict], query: str) -> list[dict]:
        wanted, said = words(query), [words(m["content"]) for m in older]
        spread = collections.Counter(word for message in said for word in message)  # common words tell little
        ranked = sorted(((sum(1 / spread[w] for w in wanted & message), i) for i, message in enumerate(said)),
                        reverse=True)
        chosen, left = [], self.spec.budget
        for shared, index in ranked:  # the most relevant first, the latest first among equals
            size = len(older[index]["content"][:CLIP].split())
            if shared and size <= left:
                chosen.append(index)
                left -= size
        return [older[index] for index in sorted(chosen)]


class CodeMemory(Memory):
    """A spec's `code` section computes the view, in the sandbox, in place of the kind's."""

    async def view(self, run: RunContext, talk: Conversation) -> list[dict]:
        return list(await run.run_code("memory", {"messages": talk.history}))


def recent(history: list[dict], window: int) -> list[dict]:
    """The task message and the last `window` messages after it."""
    return history if len(history) <= 1 else [history[0], *history[1:][-window:]]


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9_]{3,}", text.lower()))


def under_task(view: list[dict], text: str) -> list[dict]:
    """`view` with `text` added to its first message, the task's."""
    return merge_users([view[0], {"role": "user", "content": text}, *view[1:]])


def merge_users(messages: list[dict]) -> list[dict]:
    """Chat templates want alternating roles: fold consecutive user messages into one."""
    merged: list[dict] = []
    for m in messages:
        if merged and merged[-1]["role"] == m["role"] == "user":
            merged[-1] = {"role": "user", "content": merged[-1]["content"] + "\n\n" + m["content"]}
        else:
            merged.append(m)
    return merged
