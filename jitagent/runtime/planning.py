"""P: planning, the guidance an action loop works from: a plan, revised plans, a reflection between
attempts, answered sub-questions. One class per kind."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import ClassVar

from jitagent.harness.spec import PlanningSpec
from jitagent.runtime import parsing
from jitagent.runtime.clipping import ANSWER_CHARS, head_and_tail
from jitagent.runtime.conversation import Attempt, Conversation
from jitagent.runtime.events import Step
from jitagent.runtime.stage import RunContext, Stage
from jitagent.sandbox.tools import describe_tools

# (prompt, depth, lesson, seed) -> the attempt of a sub-agent on the same run
Solve = Callable[[str, int, str, int], Awaitable[Attempt]]


class Planning(Stage):
    """The base plans only with a spec's `code` section for planning, and allows one attempt."""

    kinds: ClassVar[dict[str, type[Planning]]] = {}
    section = "planning"
    spec: PlanningSpec

    @property
    def attempts(self) -> int:
        """Attempts at the task per sample; each after the first follows a reflection."""
        return 1

    async def context(self, run: RunContext, prompt: str, depth: int, seed: int, solve: Solve) -> str:
        """What the action loop on `prompt` is told before it starts, besides the task."""
        return ""

    async def start(self, run: RunContext, talk: Conversation) -> None:
        plan = await self.opening_plan(run, talk)
        if plan is not None:
            talk.plan = plan
            await run.emit(Step(kind="plan", text=plan, depth=talk.depth))

    async def opening_plan(self, run: RunContext, talk: Conversation) -> str | None:
        if not run.has_code("planning"):
            return None
        return str(await run.run_code("planning", {"task": talk.prompt, "history": []}))

    async def revise(self, run: RunContext, talk: Conversation) -> None:
        """Before each step: revise the plan."""

    async def reflect(self, run: RunContext, attempt: Attempt, number: int) -> str:
        """What the next attempt should do differently."""
        answer = attempt.answer if attempt.answer is None else head_and_tail(attempt.answer, ANSWER_CHARS)
        lesson = await run.ask("reflect", 96, task=run.task.prompt, answer=answer, problem=attempt.failure)
        await run.emit(Step(kind="reflection", text=lesson, step=number))
        return lesson


class NoPlanning(Planning, kind="none"):
    """The task as it is."""


class Upfront(Planning, kind="upfront"):
    """A short plan before the first step."""

    async def opening_plan(self, run: RunContext, talk: Conversation) -> str | None:
        return await self.plan(run, talk.prompt, [])

    async def plan(self, run: RunContext, prompt: str, history: list[dict]) -> str:
        """The planner is told the agent's tools, or a small model plans a human's how-to
        ("open a terminal")."""
        progress = "\n".join(m["content"][:300] for m in history[-4:])
        tools = run.toolbox.allowed
        abilities = (run.prompts.text("plan", "with_tools", tools=describe_tools(tools)) if tools
                     else run.prompts.text("plan", "without_tools"))
        return await run.ask("plan", 128, "user_with_progress" if progress else "user",
                             task=prompt, progress=progress, abilities=abilities)


class Replan(Upfront, kind="replan"):
    """The upfront plan, and a revised one every `every` steps."""

    async def revise(self, run: RunContext, talk: Conversation) -> None:
        if talk.step and talk.step % self.spec.every == 0:
            plan = await self.plan(run, talk.prompt, talk.history)
            talk.tell(f"Revised plan:\n{plan}")
            await run.emit(Step(kind="plan", text=plan, step=talk.step, depth=talk.depth))


class Reflect(Planning, kind="reflect"):
    """Reflexion: up to `max_attempts` attempts, each after a reflection on why the one before failed."""

    @property
    def attempts(self) -> int:
        return self.spec.max_attempts


class Decompose(Planning, kind="decompose"):
    """Least-to-most: sub-questions answered in order by sub-agents, each seeing the earlier answers,
    down to `max_depth` levels; the answers are the context of the action loop on the whole."""

    async def context(self, run: RunContext, prompt: str, depth: int, seed: int, solve: Solve) -> str:
        if depth >= self.spec.max_depth:
            return ""
        text = await run.ask("decompose", 160, task=prompt, max_subtasks=self.spec.max_subtasks)
        subtasks = parsing.numbered_lines(text)[: self.spec.max_subtasks]
        await run.emit(Step(kind="plan", text=text, depth=depth))
        solved: list[tuple[str, str]] = []
        for i, sub in enumerate(subtasks):
            known = f"\n\nKnown so far:\n{_qa(solved)}" if solved else ""
            attempt = await solve(sub + known, depth + 1, "", seed + i + 1)
            solved.append((sub, head_and_tail(attempt.answer or "(no answer)", ANSWER_CHARS)))
            await run.emit(Step(kind="subtask", text=f"{sub} -> {attempt.answer}", depth=depth + 1, step=i))
        return "Sub-questions already answered:\n" + _qa(solved) if solved else ""


def _qa(pairs: list[tuple[str, str]]) -> str:
    return "\n".join(f"Q: {q}\nA: {a}" for q, a in pairs)
