"""The validation ladder, cheapest rung first; each failure is kept as evidence (and fed to repair).

1. json     — the output parses and matches the edit (or full-spec) schema
2. spec     — the built HarnessSpec validates (field-named errors; templates fill without error,
              a `code` section parses and defines its stage interface)
3. semantic — tools exist and the task allows them; limits within the server's ceilings
   (before it: what is merely too big is clamped, and an instruction copying a task the
   meta-model was shown — a reward-hacking smell — is dropped; both are recorded as notes)
4. code     — a `code` section survives a smoke call in the sandbox with sample inputs
5. dry run  — the harness runs on the task with a step cap without a harness error
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field

from pydantic import BaseModel, Field, ValidationError

from jitagent.common.safe_loading import NestingError, json_loads
from jitagent.harness.spec import HarnessSpec, Prompts, SpecError, format_validation_error, parse_spec
from jitagent.improvement.synthesis.edit import INSTRUCTION, HarnessEdit, build_spec
from jitagent.improvement.synthesis.prompt import SUMMARY_MARKUP
from jitagent.runtime.stage_code import StageCodeError, call_stage
from jitagent.sandbox.launch import Workspace
from jitagent.tasks.task import Task

SMOKE_INPUTS = {
    "memory": {"messages": [{"role": "user", "content": "task"}, {"role": "assistant", "content": "step"}]},
    "planning": {"task": "Add 2 and 3.", "history": []},
    "answer": {"text": "5"},
    "solve": {"task": "Add 2 and 3."},
}


class Ceilings(BaseModel):
    """Limits no synthesized harness may exceed on this server."""

    max_steps: int = Field(8, ge=1)
    max_tool_calls: int = Field(12, ge=0)
    max_tokens: int = Field(2048, ge=16)
    timeout_s: float = Field(120.0, gt=0)
    samples: int = Field(5, ge=1)


@dataclass
class Check:
    rung: str
    ok: bool
    error: str = ""


@dataclass
class Validated:
    spec: HarnessSpec | None
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # normalizations applied after decoding

    @property
    def ok(self) -> bool:
        return self.spec is not None and all(c.ok for c in self.checks)

    @property
    def error(self) -> str:
        failed = [c for c in self.checks if not c.ok]
        return f"[{failed[0].rung}] {failed[0].error}" if failed else ""


def parse_output(text: str, parents: dict[str, HarnessSpec], ceilings: Ceilings) -> Validated:
    """Rungs 1-2. `parents` maps reference names to specs."""
    try:
        value = json_loads(text)
    except json.JSONDecodeError as exc:
        return Validated(None,
                         [Check("json", False,
                                f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")])
    except NestingError as exc:
        return Validated(None, [Check("json", False, f"not a harness edit: {exc}")])
    if not isinstance(value, dict):
        return Validated(None, [Check("json", False, f"expected a JSON object, got {type(value).__name__}")])
    if "spec" in value:  # a whole spec: the escape hatch for what an edit cannot express
        try:
            spec = parse_spec(value["spec"])
        except SpecError as exc:
            return Validated(None, [Check("json", True), Check("spec", False, str(exc))])
        return Validated(spec, [Check("json", True), Check("spec", True)])
    notes = []
    if isinstance(value.get("tools"), list):
        deduped = list(dict.fromkeys(value["tools"]))
        if deduped != value["tools"]:
            notes.append(f"tools de-duplicated: {value['tools']} -> {deduped}")
            value["tools"] = deduped
    if value.get("answer_from") == "stdout" and value.get("action") not in (None, "codeact"):
        notes.append(f"answer_from stdout needs codeact: -> text for action {value['action']!r}")
        value["answer_from"] = "text"  # the grammar cannot tie the two fields; the meaning is plain
    if isinstance(value.get("max_steps"), int) and value["max_steps"] > ceilings.max_steps:
        notes.append(f"max_steps clamped {value['max_steps']} -> {ceilings.max_steps}")
        value["max_steps"] = ceilings.max_steps
    try:
        edit = HarnessEdit.model_validate(value)
    except ValidationError as exc:
        return Validated(None, [Check("json", False, "schema: " + format_validation_error(exc))], notes)
    if edit.parent not in parents:
        error = f"parent: {edit.parent!r} is not one of the references {sorted(parents)}"
        return Validated(None, [Check("json", False, error)], notes)
    try:
        spec = build_spec(edit, parents[edit.parent])
    except SpecError as exc:
        return Validated(None, [Check("json", True), Check("spec", False, str(exc))], notes)
    return Validated(spec.derive(parent_id=parents[edit.parent].id),
                     [Check("json", True), Check("spec", True)], notes)


def parents_adapter(spec: HarnessSpec, parents: dict[str, HarnessSpec], notes: list[str]) -> HarnessSpec:
    """A variant runs with its parent's adapter or none: a meta-model never names weights of its own."""
    if spec.adapter is None or spec.adapter in {p.adapter for p in parents.values()}:
        return spec
    notes.append(f"adapter {spec.adapter!r} is no parent's: dropped")
    return parse_spec(spec.model_dump(mode="json") | {"adapter": None})


def clamp(spec: HarnessSpec, ceilings: Ceilings, notes: list[str]) -> HarnessSpec:
    """Small models ignore a schema's `maximum` under a grammar: clamp what is merely too big."""
    limits = spec.limits.model_dump()
    for key in ("max_steps", "max_tool_calls", "max_tokens", "timeout_s"):
        if limits[key] > getattr(ceilings, key):
            notes.append(f"limits.{key} clamped {limits[key]} -> {getattr(ceilings, key)}")
            limits[key] = getattr(ceilings, key)
    data = spec.model_dump(mode="json")
    data["limits"] = limits
    if data["action"]["samples"] > ceilings.samples:
        notes.append(f"action.samples clamped {data['action']['samples']} -> {ceilings.samples}")
        data["action"]["samples"] = ceilings.samples
    return parse_spec(data)


def semantic_errors(spec: HarnessSpec, task: Task, ceilings: Ceilings) -> list[str]:
    errors = [f"tools.tools: the task does not allow tool {t!r} (allowed: {task.tools})"
              for t in spec.tools.tools if not task.allows(t)]
    for key in ("max_steps", "max_tool_calls", "max_tokens", "timeout_s"):
        if getattr(spec.limits, key) > getattr(ceilings, key):
            errors.append(f"limits.{key}: {getattr(spec.limits, key)} exceeds the server ceiling "
                          f"{getattr(ceilings, key)}")
    # a weak meta-model writes these under the grammar (react in one step: the program is never run)
    if spec.action.answers_after_a_tool and spec.limits.max_steps < 2:
        errors.append(f"limits.max_steps: action.kind {spec.action.kind!r} answering from "
                      f"{spec.action.answer_from} reads a tool's result in a later step; give it at least "
                      "2 steps, or action.kind 'codeact' with answer_from 'stdout'")
    return errors + contradictions(spec)


NO_TOOLS = re.compile(r"\b(?:no tools|without (?:any )?tools)\b", re.IGNORECASE)
WRITES_CODE = re.compile(r"python program|write (?:a |the )?(?:python )?(?:program|code)|```python",
                         re.IGNORECASE)


def prompt_markup(spec: HarnessSpec) -> list[str]:
    """A harness that carries the synthesis prompt's reference summary (`action=..., tools=...`) into its own
    text shows the solver field settings, not instructions."""
    if SUMMARY_MARKUP.search(f"{prose(spec)} {spec.prompts.prefill}"):
        return ["prompts: the text carries the reference summary's markup (action=..., tools=...) from the "
                "synthesis prompt; write instructions, not field settings"]
    return []


def contradictions(spec: HarnessSpec) -> list[str]:
    """Where a harness's words say one thing and its fields another (the solver reads the words, the runtime
    runs the fields), or it carries the synthesis prompt's markup; every seed is free of these. `validate`
    and synthesis refuse them all."""
    text = prose(spec)
    errors = []
    if spec.tools.tools and NO_TOOLS.search(text):
        errors.append(f"prompts: the text says no tools, but tools.tools is {spec.tools.tools}")
    asks_for_code = WRITES_CODE.search(text) or spec.prompts.prefill.startswith("```")
    if asks_for_code and spec.action.kind == "direct":
        errors.append("action.kind: 'direct' never runs code, but the prompts ask for a program; use "
                      "'codeact' with the python tool, or ask for the answer itself")
    return errors + prompt_markup(spec)


QUOTED = re.compile(r"""'([^'\n]{3,})'|"([^"\n]{3,})"|`([^`\n]{3,})`""")


def copies_task(line: str, text: str, known: frozenset[str] = frozenset()) -> bool:
    """A line of harness text that restates a task the meta-model was shown, carries its numbers (a possible
    wrong answer, or a hint hard-coded for one task), quotes a phrase of it, or names one of its distinctive
    words (6 letters or more, not in the parents' own text: `known`) beside a number or an answer, is
    dropped, never trusted: a harness serves a cluster, not one task, and its lineage must not compound one
    task's text."""
    task_words = set(re.findall(r"\w+", text.lower()))
    words = re.findall(r"\w+", line.lower())
    shares_numbers = set(re.findall(r"\d{2,}", line)) & set(re.findall(r"\d{2,}", text))
    quoted = (g.strip().lower() for m in QUOTED.finditer(line) for g in m.groups() if g)
    quotes = any(q in text.lower() and q not in known for q in quoted)  # `'python'` is the harness's word
    distinctive = {w for w in words if len(w) >= 6 and w.isalpha() and w in task_words and w not in known}
    answers = bool(re.search(r"\d", line)) or "answer" in words
    return bool(shares_numbers) or quotes or bool(distinctive and answers) or (
        len(words) >= 6 and sum(w in task_words for w in words) / len(words) > 0.6)


SENTENCE = re.compile(r"(?<=[.!?])\s+")


def drop_copied_text(spec: HarnessSpec, texts: tuple[str, ...], parents: dict[str, HarnessSpec],
                     notes: list[str]) -> HarnessSpec:
    """`spec` without the harness text that copies any of `texts` (the tasks the meta-model was shown): its
    instruction lines, the sentences of its system prompt and description, and its few-shot pairs."""
    structure = json.dumps(spec.model_dump(mode="json", exclude={"description", "prompts", "envelope"}))
    known = harness_words() | words_of(" ".join([structure.replace("_", " "), *map(prose, parents.values())]))
    copies = lambda line: any(copies_task(line, t, known) for t in texts)  # noqa: E731
    data = spec.model_dump(mode="json")
    prompts = data["prompts"]
    kept = [line for line in prompts["instructions"] if not copies(line)]
    dropped = [line for line in prompts["instructions"] if line not in kept]
    prompts["instructions"] = kept
    for line in dropped:  # the variant's description names its instruction (edit.build_spec)
        data["description"] = data["description"].replace(f"{INSTRUCTION}{line}", "")
    # text that is all copy falls back to the field's default, or for a description to the harness's name
    for owner, key, bare in ((prompts, "system", Prompts.model_fields["system"].default),
                             (data, "description", spec.name)):
        sentences = SENTENCE.split(owner[key])
        dropped += [x for x in sentences if copies(x)]
        owner[key] = " ".join(x for x in sentences if not copies(x)) or bare
    shots = [shot for shot in prompts["few_shot"] if not (copies(shot["user"]) or copies(shot["assistant"]))]
    dropped += [None] * (len(prompts["few_shot"]) - len(shots))
    prompts["few_shot"] = shots
    if not dropped:
        return spec
    notes.append(f"dropped {len(dropped)} line(s) of harness text copying a task")
    return parse_spec(data)


def words_of(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"\w+", text.lower()))


@functools.cache
def harness_words() -> frozenset[str]:
    """The words harnesses are written in: every seed's prose and the protocol's names, so that a distinctive
    word is one of a task's, not of the harness language (`answer`, `python`, `planning`)."""
    from jitagent.harness.seeds import load_seeds

    seeds = load_seeds().values()
    schema = json.dumps(HarnessSpec.model_json_schema()).replace("_", " ")
    return words_of(" ".join([*map(prose, seeds), schema]))


def prose(spec: HarnessSpec) -> str:
    """The harness's own words: its description, system prompt, instructions and few-shot pairs."""
    p = spec.prompts
    shots = (f"{s.user} {s.assistant}" for s in p.few_shot)
    return " ".join([spec.description, p.system, *p.instructions, *shots])


async def check_code(spec: HarnessSpec, deadline: float | None = None) -> str | None:
    """Why a smoke call of one of the spec's code sections fails in the sandbox, or None. `deadline`
    (monotonic): the calls run on the time left of the synthesis that asked for them."""
    try:
        with Workspace() as ws:
            for section in spec.code_sections:
                await call_stage(section, SMOKE_INPUTS[section.stage], ws, deadline=deadline)
    except StageCodeError as exc:
        return str(exc)
    return None


async def validate_static(text: str, parents: dict[str, HarnessSpec], task: Task,
                          ceilings: Ceilings, shown: tuple[str, ...] = (),
                          deadline: float | None = None) -> Validated:
    """Rungs 1-4 (the dry run needs a solver and is run by the synthesizer). `shown`: the texts of the other
    tasks the meta-model was shown (its parent's failures), which no instruction may copy either."""
    result = parse_output(text, parents, ceilings)
    if result.spec is None:
        return result
    spec = parents_adapter(clamp(result.spec, ceilings, result.notes), parents, result.notes)
    result.spec = drop_copied_text(spec, (task.prompt, *shown), parents, result.notes)
    errors = semantic_errors(result.spec, task, ceilings)
    result.checks.append(Check("semantic", not errors, "; ".join(errors)))
    if errors:
        return result
    code_error = await check_code(result.spec, deadline)
    result.checks.append(Check("code", code_error is None, code_error or ""))
    return result
