"""Verifiers: turn an answer (and the workspace after the run) into a verdict and a reward."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

import regex

from jitagent.sandbox.launch import SandboxLimits, Workspace, sandbox_python
from jitagent.tasks.calls import calls_match
from jitagent.tasks.task import Task

NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?|-?\.\d+")
FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)(?:```|$)", re.S)
REGEX_TIMEOUT_S = 1.0  # a task's own pattern may backtrack without end


@dataclass
class Verdict:
    passed: bool | None  # None: not verified (no verifier, a dry run), never a failure
    reward: float | None
    detail: str


def last_number(text: str) -> float | None:
    found = NUMBER.findall(text or "")
    if not found:
        return None
    try:
        return float(found[-1].replace(",", ""))
    except ValueError:
        return None


def code_of(answer: str) -> str:
    """The code in an answer: its fenced blocks joined, or the answer itself."""
    blocks = FENCE.findall(answer or "")
    return "\n\n".join(b.strip() for b in blocks) if blocks else (answer or "")


def _normal(text: str, case_sensitive: bool) -> str:
    text = " ".join(str(text).strip().strip("`\"'").split()).rstrip(".")
    return text if case_sensitive else text.casefold()


def reference_answer(task: Task) -> str | None:
    """A correct answer where the verifier states one (exact, numeric, a reasoning_gym entry's), else None:
    what a writer of code for the task's cluster may be shown of a labelled task."""
    v = task.verifier
    if v.kind in ("exact", "numeric") and v.expected is not None:
        return str(v.expected)
    if v.kind == "reasoning_gym":
        from jitagent.tasks.suites.external import reasoning_gym_answer

        return reasoning_gym_answer(v.dataset, v.seed, v.size, v.index)
    return None


async def verify(task: Task, answer: str | None, workspace: Workspace,
                 limits: SandboxLimits | None = None, deadline: float | None = None) -> Verdict:
    """`deadline` (monotonic): a check that runs code (python_tests, shell_check) gets at most the time
    left of the run that asked for it, not its own wall limit on top of it."""
    v = task.verifier
    if v.kind == "none":
        return Verdict(None, None, "unverified: the task has no verifier")
    limits = limits or SandboxLimits(wall_s=15, cpu_s=10)
    if answer is None and v.kind != "shell_check":
        return Verdict(False, 0.0, "no answer")
    answer = answer or ""
    if v.kind == "exact":
        ok = _normal(answer, v.case_sensitive) == _normal(str(v.expected), v.case_sensitive)
        return Verdict(ok, float(ok), f"expected {v.expected!r}, got {answer[:200]!r}")
    if v.kind == "numeric":
        got = last_number(answer)
        ok = got is not None and (abs(got - float(v.expected))
                                  <= v.tolerance * max(1.0, abs(float(v.expected))))
        return Verdict(ok, float(ok), f"expected {v.expected}, got {got}")
    if v.kind == "regex":
        flags = 0 if v.case_sensitive else regex.I
        try:  # in a worker thread, with a time limit: the pattern is the task's, untrusted
            ok = await asyncio.to_thread(regex.search, v.pattern, answer, flags, timeout=REGEX_TIMEOUT_S,
                                         concurrent=True) is not None
        except TimeoutError:
            return Verdict(False, 0.0,
                           f"pattern {v.pattern[:200]!r} ran past {REGEX_TIMEOUT_S} s: not matched")
        return Verdict(ok, float(ok), f"pattern {v.pattern!r} {'matched' if ok else 'not found'}")
    if v.kind == "calls":  # the answer is the run's calls of the client's functions, as JSON
        ok, detail = calls_match(v.expected, answer)
        return Verdict(ok, float(ok), detail)
    if v.kind == "reasoning_gym":
        from jitagent.tasks.suites.external import score_reasoning_gym

        reward = await asyncio.to_thread(score_reasoning_gym, answer, v.dataset, v.seed, v.size, v.index)
        return Verdict(reward >= 1.0, reward, f"reasoning-gym {v.dataset} score {reward:.2f}")
    if v.kind == "python_tests":
        program = ((v.prelude or "") + "\n" + code_of(answer) + "\n\n" + (v.tests or "")
                   + "\nprint('ALL TESTS PASSED')\n")
        result = await workspace.run([sandbox_python(), "-c", program], limits, deadline=deadline)
        ok = result.ok and "ALL TESTS PASSED" in result.stdout
        return Verdict(ok, float(ok), result.describe()[-600:])
    result = await workspace.run(["/bin/sh", "-c", v.command or "false"], limits, deadline=deadline)
    return Verdict(result.ok, float(result.ok), result.describe()[-600:])
