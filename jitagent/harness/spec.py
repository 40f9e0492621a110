"""The harness: one typed, single-file artifact (the protocol Π = (M, P, F, A)).

A `HarnessSpec` is what the meta-model writes, the bank stores and the runtime executes.
Its id is a digest of its content, so two identical harnesses are one harness.
"""

from __future__ import annotations

import ast
import hashlib
import json
import string
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from jitagent.common.errors import one_line
from jitagent.common.safe_loading import NestingError, yaml_load
from jitagent.sandbox.tools import TOOL_NAMES

# Fields a prompt template may reference; anything else is a validation error.
TEMPLATE_FIELDS = frozenset({"task", "tools", "plan", "notes", "summary", "observation", "step",
                             "reflection"})

# What the runtime itself asks the model, by name: each part and the fields it may use. The texts are
# data (seeds/control_prompts.yaml); a spec overrides any part under `prompts.control`.
CONTROL_PROMPTS: dict[str, dict[str, frozenset[str]]] = {
    "judge": dict.fromkeys(("system", "user"), frozenset({"task", "candidates"})),
    "self_check": dict.fromkeys(("system", "user"), frozenset({"task", "answer"})),
    "reflect": dict.fromkeys(("system", "user"), frozenset({"task", "answer", "problem"})),
    "decompose": dict.fromkeys(("system", "user"), frozenset({"task", "max_subtasks"})),
    "plan": {**dict.fromkeys(("system", "user", "user_with_progress"),
                             frozenset({"task", "progress", "abilities"})),
             "with_tools": frozenset({"tools"}), "without_tools": frozenset()},
    "summarize": dict.fromkeys(("system", "user", "user_with_summary"), frozenset({"summary", "history"})),
    "nudge": {"user": frozenset()},
    "first_tool": {"user": frozenset({"tool"})},
    "client_tools": {**dict.fromkeys(("system", "system_one_call"), frozenset({"functions"})),
                     "invalid": frozenset({"problem"})},
}

# A `code` section implements one stage in Python; the runtime calls this function in the sandbox.
CODE_INTERFACES: dict[str, tuple[str, tuple[str, ...]]] = {
    "memory": ("view", ("messages",)),          # list[dict] -> list[dict]
    "planning": ("guidance", ("task", "history")),  # (str, list[dict]) -> str
    # the harness's answer (as extracted, or as printed) -> that answer in the form the task asks for
    "answer": ("extract_answer", ("text",)),    # str -> str
    # code written for a cluster: the task -> its answer, computed; None (or a failure): the loop answers
    "solve": ("solve", ("task",)),              # str -> str | None
}
MAX_CODE_CHARS = 20_000  # a code section is parsed in the server process: bounded


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MemorySpec(_Strict):
    """M: what of the history the model sees each step."""

    kind: Literal["full", "window", "summary", "notes", "retrieval"] = "full"
    window: int = Field(6, ge=1, le=64, description="messages kept by `window` (and `notes`, `retrieval`)")
    every: int = Field(4, ge=1, le=64, description="`summary`: summarize after this many steps")
    budget: int = Field(160, ge=16, le=2048, description="`summary`: max tokens of a summary; "
                        "`retrieval`: max words recalled from older messages")


class PlanningSpec(_Strict):
    """P: turning the memory view into local guidance."""

    kind: Literal["none", "upfront", "replan", "reflect", "decompose"] = "none"
    every: int = Field(3, ge=1, le=64, description="`replan`: plan again every N steps")
    max_attempts: int = Field(2, ge=1, le=5, description="`reflect`: attempts, each after a reflection")
    max_depth: int = Field(1, ge=1, le=3, description="`decompose`: depth of sub-agents")
    max_subtasks: int = Field(3, ge=1, le=6, description="`decompose`: subtasks per level")


class ToolPolicy(_Strict):
    """F: capability orchestration."""

    tools: list[str] = Field(default_factory=list)
    # read by nothing (every allowed tool is offered), yet kept: it is in every stored spec and its digest,
    # so dropping it would change every harness id and leave stored specs unreadable
    select: Literal["all", "relevant"] = "all"
    retry: int = Field(0, ge=0, le=3, description="re-run a tool call that failed for infrastructure reasons")
    required_first: str | None = Field(None, description="a tool the first step must call")
    # the model's own template is how its users serve it tools; described signatures may suit a harness's
    # format better: which one pays is learned per cluster, as any field
    client: Literal["described", "native"] = Field(
        "described", description="how the client's functions reach the model: `described` as signatures in "
        "the system prompt, `native` rendered by the model's own chat template (the back-end's `tools`)")

    @field_validator("tools")
    @classmethod
    def _known_unique(cls, tools: list[str]) -> list[str]:
        unknown = [t for t in tools if t not in TOOL_NAMES]
        if unknown:
            raise ValueError(f"unknown tool(s) {unknown}; known: {list(TOOL_NAMES)}")
        if len(set(tools)) != len(tools):
            raise ValueError(f"duplicate tools in {tools}")
        return tools

    @model_validator(mode="after")
    def _first_is_listed(self) -> ToolPolicy:
        if self.required_first and self.required_first not in self.tools:
            raise ValueError(f"required_first {self.required_first!r} is not in tools {self.tools}")
        return self


# the step formats whose replies call a tool by name (codeact's replies are programs)
TOOL_CALLING_KINDS = ("react", "json_tool")


class ActionSpec(_Strict):
    """A: the step format, sampling, voting, verification and stopping."""

    kind: Literal["direct", "react", "codeact", "json_tool"] = "direct"
    samples: int = Field(1, ge=1, le=8)
    vote: Literal["majority", "judge"] = "majority"
    verify: Literal["none", "self_check", "run_tests"] = "none"
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    answer_from: Literal["text", "stdout", "reply"] = Field(
        "text", description="`text`: what the last reply commits to (`Final answer: X`, else its last line); "
        "`stdout`: the last line printed by the last program run; `reply`: the whole last reply, as a chat's "
        "user reads it")

    @property
    def answers_after_a_tool(self) -> bool:
        """Whether a tool's result reaches the answer only in a later step: every kind that calls tools,
        except a program whose printed output is the answer."""
        return self.kind in TOOL_CALLING_KINDS or (self.kind == "codeact" and self.answer_from == "text")


class FewShot(_Strict):
    user: str
    assistant: str


class ExamplesSpec(_Strict):
    """How many of its cluster's verified solutions a harness shows before the task, in place of its own
    `few_shot` (kept where the cluster has none yet). The pipeline fills them per task from the bank."""

    k: int = Field(2, ge=1, le=4, description="solutions shown, at most")
    min_reward: float = Field(1.0, gt=0, le=1, description="the least reward a run needs to be shown")
    max_chars: int = Field(800, ge=100, le=4000,
                           description="a solution (its task and turns) longer than this is not shown")
    pick: Literal["nearest", "diverse", "random"] = Field(
        "diverse", description="`nearest` to the task; `diverse`: near it and unlike each other (the "
        "family's variants); `random` among the cluster's")


class Prompts(_Strict):
    system: str = "You are a careful assistant. Solve the task."
    step: str = Field("{task}",
                      description="user message template; fields: " + ", ".join(sorted(TEMPLATE_FIELDS)))
    prefill: str = Field("", description="text the assistant reply starts with (continued by the model)")
    few_shot: list[FewShot] = Field(default_factory=list)
    examples: ExamplesSpec | None = Field(
        None, description="show the cluster's verified solutions (see ExamplesSpec); None: never")
    instructions: list[str] = Field(default_factory=list,
                                    description="extra lines appended to the system prompt")
    control: dict[str, dict[str, str]] = Field(
        default_factory=dict, description="parts of the runtime's own prompts to replace, by name and part: "
        + "; ".join(f"{name}: {', '.join(parts)}" for name, parts in CONTROL_PROMPTS.items()))

    @field_validator("system", "step")
    @classmethod
    def _plain_known_fields(cls, template: str) -> str:
        if problem := template_problem(template):
            raise ValueError(problem)
        return template

    @field_validator("control")
    @classmethod
    def _known_control_parts(cls, control: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        if problem := control_prompts_problem(control):
            raise ValueError(problem)
        return control

    @model_serializer(mode="wrap")
    def _without_unused_parts(self, handler):
        """A spec that replaces no control prompt and shows no examples dumps, and so digests, as before
        either could be set."""
        data = handler(self)
        if not self.control:
            data.pop("control", None)
        if self.examples is None:
            data.pop("examples", None)
        return data


def control_prompts_problem(control: dict[str, dict[str, str]]) -> str | None:
    """Why `control` does not name parts of known control prompts filled only with their fields, or None."""
    for name, parts in control.items():
        if name not in CONTROL_PROMPTS:
            return f"unknown control prompt {name!r}; known: {list(CONTROL_PROMPTS)}"
        for part, template in parts.items():
            if part not in CONTROL_PROMPTS[name]:
                known = list(CONTROL_PROMPTS[name])
                return f"control prompt {name!r} has no part {part!r}; its parts: {known}"
            if problem := template_problem(template, CONTROL_PROMPTS[name][part]):
                return f"{name}.{part}: {problem}"
    return None


def template_problem(template: str, allowed: frozenset[str] = TEMPLATE_FIELDS) -> str | None:
    """Why filling `template` could fail at run time, or None: only `{name}` of an allowed field,
    no attribute or index access, no conversion or format spec (each can raise, or reach objects)."""
    try:
        fields = [(name, spec, conversion) for _, name, spec, conversion in string.Formatter().parse(template)
                  if name is not None]
    except ValueError as exc:
        return f"malformed template: {exc}"
    unknown = sorted({name for name, _, _ in fields if name not in allowed})
    if accessed := [n for n in unknown if n.split(".")[0].split("[")[0] in allowed]:
        return f"template field(s) {accessed}: attribute and index access are not allowed; write {{name}}"
    if unknown:
        return f"template references unknown field(s) {unknown}; allowed: {sorted(allowed)}"
    if decorated := sorted({name for name, spec, conversion in fields if spec or conversion}):
        return f"template field(s) {decorated}: conversions and format specs are not allowed; write {{name}}"
    return None


class Limits(_Strict):
    max_steps: int = Field(4, ge=1, le=30)
    max_tool_calls: int = Field(6, ge=0, le=60)
    max_tokens: int = Field(1024, ge=16, le=16384, description="completion tokens over the whole run")
    timeout_s: float = Field(60.0, gt=0, le=1800)


class CodeSection(_Strict):
    stage: Literal["memory", "planning", "answer", "solve"]
    source: str = Field(..., min_length=1, max_length=MAX_CODE_CHARS)

    @model_validator(mode="after")
    def _defines_its_interface(self) -> CodeSection:
        if problem := interface_problem(self.stage, self.source):
            raise ValueError(problem)
        return self


def interface_problem(stage: str, source: str) -> str | None:
    """Why `source` does not implement the stage's function (it does not parse, lacks the function,
    or takes other parameters), or None. Parsing only: the code itself runs in the sandbox."""
    func, params = CODE_INTERFACES[stage]
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return f"source: SyntaxError: {exc.msg} (line {exc.lineno}, column {exc.offset})"
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, nesting the parser refuses
        return f"source: does not parse: {type(exc).__name__}: {str(exc)[:200]}"
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    if func not in defs:
        return (f"source: stage {stage!r} must define `def {func}({', '.join(params)})`; "
                f"found functions {sorted(defs) or 'none'}")
    got = tuple(a.arg for a in defs[func].args.args)
    if got != params:
        return f"source: `{func}` must take parameters {params}, it takes {got}"
    return None


class Envelope(_Strict):
    id: str = ""
    parent_id: str | None = None
    origin: Literal["seed", "synthesized", "repaired", "evolved"] = "seed"
    generator: str = "human"
    tools_requested: list[str] = Field(default_factory=list)


class HarnessSpec(_Strict):
    name: str = Field(..., min_length=1, max_length=80)
    description: str = Field(..., min_length=1)
    memory: MemorySpec = Field(default_factory=MemorySpec)
    planning: PlanningSpec = Field(default_factory=PlanningSpec)
    tools: ToolPolicy = Field(default_factory=ToolPolicy)
    action: ActionSpec = Field(default_factory=ActionSpec)
    prompts: Prompts = Field(default_factory=Prompts)
    limits: Limits = Field(default_factory=Limits)
    code: list[CodeSection] | None = Field(
        None, description="Python for what the built-in kinds cannot express: one section, or one per stage")
    adapter: str | None = Field(
        None, pattern=r"^[0-9a-f]{16}$", description="the solver runs with this LoRA adapter of the bank's "
        "(its id, as `bank adapters` lists it); None: the base model")
    envelope: Envelope = Field(default_factory=Envelope)

    @field_validator("code", mode="before")
    @classmethod
    def _one_or_several(cls, code):
        return [code] if isinstance(code, dict) else code

    @model_serializer(mode="wrap")
    def _one_section_as_written(self, handler):
        """One section dumps as a mapping, as before a spec could carry several, and a spec with no adapter
        or with client tools described dumps as before either could be named: its id stays the same."""
        data = handler(self)
        if isinstance(data.get("code"), list) and len(data["code"]) == 1:
            data["code"] = data["code"][0]
        if self.adapter is None:
            data.pop("adapter", None)
        if self.tools.client == "described":  # as before a spec could name how client tools are shown
            data["tools"].pop("client", None)
        return data

    @property
    def code_sections(self) -> list[CodeSection]:
        return self.code or []

    def code_for(self, stage: str) -> CodeSection | None:
        return next((c for c in self.code_sections if c.stage == stage), None)

    @property
    def solution_format(self) -> str | None:
        """What a run's turns look like, so its solutions are shown only to a harness of the same format (a
        program to a program-writing harness); None where a run is not one conversation (samples voted)."""
        action = self.action
        return None if action.samples > 1 else f"{action.kind}/{action.answer_from}"

    @model_validator(mode="after")
    def _coherent(self) -> HarnessSpec:
        stages = [c.stage for c in self.code_sections]
        if len(set(stages)) != len(stages) or self.code == []:
            raise ValueError(f"code: one section per stage, at least one; got stages {stages}")
        if self.action.kind in TOOL_CALLING_KINDS and not self.tools.tools:
            raise ValueError(f"action.kind {self.action.kind!r} needs at least one tool in tools.tools")
        if self.action.kind == "codeact" and "python" not in self.tools.tools:
            raise ValueError("action.kind 'codeact' needs 'python' in tools.tools")
        if self.action.answer_from == "stdout" and self.action.kind != "codeact":
            raise ValueError("action.answer_from 'stdout' needs action.kind 'codeact'")
        if self.action.verify == "run_tests" and "python" not in self.tools.tools:
            raise ValueError("action.verify 'run_tests' needs 'python' in tools.tools")
        if self.prompts.examples is not None and self.solution_format is None:
            raise ValueError("prompts.examples needs action.samples 1: solutions come from and are shown to "
                             "runs of one conversation")
        self.envelope.tools_requested = list(self.tools.tools)
        self.envelope.id = self.digest()
        return self

    def content(self) -> dict:
        """Everything that defines behaviour: the spec without its envelope."""
        return self.model_dump(mode="json", exclude={"envelope"})

    def digest(self) -> str:
        canonical = json.dumps(self.content(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    @property
    def id(self) -> str:
        return self.envelope.id

    def variant(self, suffix: str, note: str, generator: str, change: Callable[[dict], None]) -> HarnessSpec:
        """A mutation of this spec that costs no meta-model call: its content as `change` edits it (in
        place), named with `suffix`, `note` added to the description; its parent this spec."""
        data = self.model_dump(mode="json")
        data["name"] = self.name[:80 - len(suffix)] + suffix
        data["description"] = f"{self.description} {note}"
        change(data)
        derived = HarnessSpec.model_validate(data)
        return derived.derive(parent_id=self.id, origin="evolved", generator=generator)

    def derive(self, **envelope: object) -> HarnessSpec:
        """A copy with a new envelope (origin, parent, generator); the id is recomputed."""
        data = self.model_dump(mode="json")
        data["envelope"] = {**Envelope().model_dump(), **envelope}
        return HarnessSpec.model_validate(data)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False, allow_unicode=True)


class SpecError(ValueError):
    """A spec that does not validate; the message names each field and its problem."""


class SpecUnreadable(SpecError):
    """A spec file that cannot be read, or text that is not YAML/JSON: no spec to validate at all."""


def yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML error in one line: its problem and where (PyYAML's own text spans several, with a caret)."""
    mark = getattr(exc, "problem_mark", None)
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
    return f"{getattr(exc, 'problem', None) or one_line(exc)}{where}"


def format_validation_error(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(root)"
        lines.append(f"{where}: {err['msg'].removeprefix('Value error, ')}")  # pydantic's, not ours
    return "; ".join(lines)


def parse_spec(data: dict | str) -> HarnessSpec:
    """Validate a dict, or JSON/YAML text, into a HarnessSpec or raise SpecError."""
    if isinstance(data, str):
        try:
            data = yaml_load(data)
        except yaml.YAMLError as exc:
            raise SpecUnreadable(f"not valid YAML/JSON: {yaml_problem(exc)}") from None
        except NestingError as exc:
            raise SpecError(f"not a harness spec: {exc}") from None
    if not isinstance(data, dict):
        raise SpecError(f"a harness spec must be a mapping, got {type(data).__name__}")
    try:
        return HarnessSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(format_validation_error(exc)) from None


def load_spec(path: str | Path) -> HarnessSpec:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise SpecUnreadable(f"{path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise SpecUnreadable(f"{path}: not UTF-8 text") from None
    try:
        return parse_spec(text)
    except SpecError as exc:
        raise type(exc)(f"{path}: {exc}") from None


def json_schema() -> dict:
    return HarnessSpec.model_json_schema()
