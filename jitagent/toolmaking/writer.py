"""The writer: a model writes a stage function for a cluster from the cluster's own labelled tasks (what
it sees: a few tasks with a correct answer, and for an answer stage what the cluster's best harness
answered). Its prompts are data (seeds/toolmaking_prompts.yaml) and name no task type. It proposes;
trials on tasks it did not see decide (jitagent.toolmaking.toolsmith)."""

from __future__ import annotations

import ast
import difflib
import re
import time
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal

from jitagent.models.base import CancelToken, ModelClient
from jitagent.nesting import yaml_load
from jitagent.runtime.events import Cost
from jitagent.spec import MAX_CODE_CHARS, interface_problem
from jitagent.tasks import Task

Stage = Literal["solve", "answer"]
FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)(?:```|$)", re.S)
SHOWN_CHARS = 1500  # of one task, answer or reply in a writer's prompt
GAP = "___"
MIN_SHARED = 10  # characters a run of wording inside the tasks must have to count as shared, not chance
TOKENS = re.compile(r"\s+|\w+|[^\w\s]")


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


@cache
def prompts() -> dict:
    return yaml_load(resources.files("jitagent.seeds").joinpath("toolmaking_prompts.yaml").read_text())


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


def draft_of(stage: Stage, reply: str, round: int = 0) -> Draft:
    """The reply's first code block (or the reply itself) as a draft of the stage's function, without the
    example calls around it."""
    blocks = FENCE.findall(reply)
    source = definitions((blocks[0] if blocks else reply).strip() + "\n")
    if len(source) > MAX_CODE_CHARS:
        return Draft(stage=stage, reply=reply, source=None, round=round,
                     problem=f"over {MAX_CODE_CHARS} characters")
    problem = interface_problem(stage, source)
    return Draft(stage=stage, reply=reply, source=None if problem else source, problem=problem or "",
                 round=round)


def clip(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + " [...]"


def shared_wording(texts: list[str]) -> str | None:
    """The wording the tasks share, with GAP where they differ — where a function finds its inputs; None
    when they share nothing worth showing. Runs shared by chance inside the varying part are gaps too."""
    base = TOKENS.findall(texts[0])
    kept = [True] * len(base)
    for other in texts[1:]:
        same = [False] * len(base)
        matcher = difflib.SequenceMatcher(None, base, TOKENS.findall(other), autojunk=False)
        for block in matcher.get_matching_blocks():
            same[block.a:block.a + block.size] = [True] * block.size
        kept = [k and s for k, s in zip(kept, same)]
    pieces: list[str] = []
    start = 0
    while start < len(base):
        end = start
        while end < len(base) and kept[end] == kept[start]:
            end += 1
        text, edge = "".join(base[start:end]), start == 0 or end == len(base)
        if kept[start] and (len(text.strip()) >= MIN_SHARED or (edge and text.strip())):
            pieces.append(text)
        elif not pieces or pieces[-1] != GAP:
            pieces.append(GAP)
        start = end
    wording = "".join(pieces)
    return wording if GAP in wording and wording.strip() != GAP else None


def examples_block(stage: Stage, examples: list[Example]) -> str:
    template = prompts()[stage]["example"]
    return "\n\n".join(template.format(number=i, task=clip(e.task.prompt), answer=clip(e.answer),
                                       given=clip(e.given or "(no answer)"))
                       for i, e in enumerate(examples, 1))


class Writer:
    """Writes `candidates` drafts of a stage's function in one call (several cheap samples, filtered by
    execution later, beat one careful sample), and repairs a draft from what it got wrong."""

    def __init__(self, model: ModelClient, *, temperature: float = 0.8, max_tokens: int = 600):
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens

    def messages(self, stage: Stage, examples: list[Example]) -> list[dict]:
        fields = {"examples": examples_block(stage, examples)}
        if stage == "solve":
            template = shared_wording([e.task.prompt for e in examples]) if len(examples) > 1 else None
            fields["wording"] = "" if template is None else prompts()["solve"]["wording"].format(
                gap=GAP, template=clip(template))
        user = prompts()[stage]["user"].format(**fields)
        return [{"role": "system", "content": prompts()["system"]}, {"role": "user", "content": user}]

    async def write(self, stage: Stage, examples: list[Example], candidates: int, seed: int, cost: Cost,
                    cancel: CancelToken | None = None) -> list[Draft]:
        start = time.monotonic()
        generation = await self.model.complete(self.messages(stage, examples), max_tokens=self.max_tokens,
                                               temperature=self.temperature, seed=seed, n=candidates,
                                               cancel=cancel)
        cost.add(generation.usage)
        cost.wall_s += time.monotonic() - start
        return [draft_of(stage, text) for text in generation.texts]

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
        return draft_of(draft.stage, generation.text, draft.round + 1)


def failure_line(number: int, got: str | None, answer: str) -> str:
    return prompts()["repair"]["failure"].format(number=number, got=clip(repr(got)), answer=clip(answer))
