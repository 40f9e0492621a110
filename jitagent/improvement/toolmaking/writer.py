"""The writer: a model writes a stage function for a cluster from the cluster's own labelled tasks (what
it sees: a few tasks with a correct answer, and for an answer stage what the cluster's best harness
answered). Its prompts are data (seeds/toolmaking_prompts.yaml) and name no task type. It proposes;
trials on tasks it did not see decide (jitagent.improvement.toolmaking.toolsmith)."""

from __future__ import annotations

import ast
import re
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from jitagent.harness.seeds import shipped_prompts
from jitagent.harness.spec import MAX_CODE_CHARS, interface_problem
from jitagent.improvement.toolmaking import wording
from jitagent.models.base import CancelToken, ModelClient
from jitagent.runtime.events import Cost
from jitagent.tasks.task import Task

Stage = Literal["solve", "answer"]
FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)(?:```|$)", re.S)
SHOWN_CHARS = 1500  # of one task, answer or reply in a writer's prompt


@dataclass(frozen=True, kw_only=True)
class Example:
    """A labelled task as the writer sees it."""

    task: Task
    answer: str  # a correct answer: the verifier's reference, or one that earned full reward
    given: str | None = None  # what the cluster's best harness answered (an answer stage's input)


@dataclass(kw_only=True)
class Draft:
    """One function the writer wrote; `source` None when the reply held no function of the interface."""

    stage: Stage
    reply: str
    source: str | None
    problem: str = ""  # why it is not a candidate ("" when it is one)
    round: int = 0  # 0: written; 1..: repaired after trials on the examples


def prompts() -> dict:
    return shipped_prompts("toolmaking")


def definitions(source: str) -> str:
    """The source without its top-level statements that are not imports, definitions or assignments: the
    example calls and prints a writer adds after its function would run (and may fail) on every import."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return source  # the interface check says what is wrong with it
    kept = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign,
            ast.AnnAssign)
    lines = source.splitlines()
    for node in reversed(tree.body):
        if not isinstance(node, kept):
            del lines[node.lineno - 1:node.end_lineno]
    return "\n".join(lines).strip() + "\n"


def draft_of(stage: Stage, reply: str, round: int = 0, prelude: str = "") -> Draft:
    """The reply's first code block (or the reply itself) as a draft of the stage's function, without the
    example calls around it, after the `prelude` it was told is defined."""
    blocks = FENCE.findall(reply)
    source = prelude + definitions((blocks[0] if blocks else reply).strip() + "\n")
    if len(source) > MAX_CODE_CHARS:
        return Draft(stage=stage, reply=reply, source=None, round=round,
                     problem=f"over {MAX_CODE_CHARS} characters")
    problem = interface_problem(stage, source)
    return Draft(stage=stage, reply=reply, source=None if problem else source, problem=problem or "",
                 round=round)


def clip(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + " [...]"


def shared(examples: list[Example]) -> str | None:
    """The wording the shown tasks share (a `solve` stage reads its inputs from where they differ)."""
    return _shared_by_prompts(tuple(e.task.prompt for e in examples)) if len(examples) > 1 else None


@lru_cache(maxsize=64)  # asked for the request, the helper, each draft's copy check and each repair
def _shared_by_prompts(prompts: tuple[str, ...]) -> str | None:
    return wording.shared_wording(list(prompts))


def examples_block(stage: Stage, examples: list[Example], shared_wording: str | None) -> str:
    template = prompts()[stage]["example_with_parts" if shared_wording else "example"]
    return "\n\n".join(template.format(
        number=i, task=clip(e.task.prompt), answer=clip(e.answer), given=clip(e.given or "(no answer)"),
        parts=shared_wording and clip(repr(wording.parts_of(shared_wording, e.task.prompt))))
        for i, e in enumerate(examples, 1))


class Writer:
    """Writes `candidates` drafts of a stage's function in one call (several cheap samples, filtered by
    execution later, beat one careful sample), and repairs a draft from what it got wrong."""

    def __init__(self, model: ModelClient, *, temperature: float = 0.8, max_tokens: int = 600):
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens

    @staticmethod
    def messages(stage: Stage, examples: list[Example]) -> list[dict]:
        """The request for a stage's function; for `solve`, with the wording the tasks share and what the
        `read_parts` helper reads from each."""
        common = shared(examples) if stage == "solve" else None
        fields = {"examples": examples_block(stage, examples, common)}
        if stage == "solve":
            text = prompts()["solve"]
            fields["wording"] = "" if common is None else text["wording"].format(gap=wording.GAP,
                                                                                 template=clip(common))
            fields["reading"] = text["with_parts" if common else "without_parts"]
        user = prompts()[stage]["user"].format(**fields)
        return [{"role": "system", "content": prompts()["system"]}, {"role": "user", "content": user}]

    @staticmethod
    def prelude(stage: Stage, examples: list[Example]) -> str:
        """What the drafts were told is defined: `read_parts` for a `solve` stage, where it applies."""
        common = shared(examples) if stage == "solve" else None
        return wording.helper(common) if common else ""

    async def write(self, stage: Stage, examples: list[Example], candidates: int, seed: int, cost: Cost,
                    cancel: CancelToken | None = None) -> list[Draft]:
        start = time.monotonic()
        generation = await self.model.complete(self.messages(stage, examples), max_tokens=self.max_tokens,
                                               temperature=self.temperature, seed=seed, n=candidates,
                                               cancel=cancel)
        cost.add(generation.usage)
        cost.wall_s += time.monotonic() - start
        prelude = self.prelude(stage, examples)
        return [draft_of(stage, text, prelude=prelude) for text in generation.texts]

    async def repair(self, draft: Draft, examples: list[Example], failures: list[str], seed: int,
                     cost: Cost, cancel: CancelToken | None = None) -> Draft:
        """The draft again, after it is told where it went wrong on the examples it was shown."""
        repair = prompts()["repair"]["user"].format(failures="\n".join(failures))
        messages = [*self.messages(draft.stage, examples), {"role": "assistant", "content": draft.reply},
                    {"role": "user", "content": repair}]
        start = time.monotonic()
        generation = await self.model.complete(messages, max_tokens=self.max_tokens, temperature=0.3,
                                               seed=seed, cancel=cancel)
        cost.add(generation.usage)
        cost.wall_s += time.monotonic() - start
        return draft_of(draft.stage, generation.text, draft.round + 1, self.prelude(draft.stage, examples))


def copied(source: str, examples: list[Example], min_chars: int = 5) -> list[tuple[int, str]]:
    """The string literals in a draft that are a shown example's own text — its whole task, a part of it
    that differs from task to task, or its answer — where not every example has it (shared wording is
    fair to match on), one word alone excepted: (example number, text). Such a draft is a lookup of what
    it saw: its trials on the examples say nothing about the kind."""
    try:
        literals = {node.value.strip() for node in ast.walk(ast.parse(source))
                    if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    common = shared(examples)
    owned = [{e.task.prompt.strip(), e.answer.strip(),
              *(common and wording.parts_of(common, e.task.prompt) or [])} for e in examples]
    found = []
    # one word alone is a keyword a rule may branch on ("ascending"), not a copy
    for literal in sorted(x for x in literals if len(x) >= min_chars and not x.isalpha()):
        holders = [number for number, texts in enumerate(owned, 1) if literal in texts]
        if holders and len(holders) < len(owned):
            found.append((holders[0], literal))
    return found


def failure_text(number: int, task: Task, answer: str, got: str | None, error: str | None) -> str:
    """What a draft did wrong on a shown task, as the repair prompt tells it."""
    if error is not None:
        return prompts()["repair"]["raised"].format(number=number, task=clip(task.prompt), error=clip(error),
                                                    answer=clip(answer))
    return prompts()["repair"]["returned"].format(number=number, task=clip(task.prompt), got=clip(repr(got)),
                                                  answer=clip(answer))


def copied_text(number: int, literal: str) -> str:
    return prompts()["repair"]["copied"].format(number=number, text=clip(repr(literal)))
