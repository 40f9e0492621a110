"""What every stage kind shares: it is found by the name the spec uses, and it works through the part of
its run that `RunContext` names (runtime.run.Run is one; the stages never import it, so the run can hold
them without an import cycle)."""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

from jitagent.harness.spec import HarnessSpec
from jitagent.models.base import CancelToken
from jitagent.runtime.events import Step, Trajectory
from jitagent.runtime.prompts import ControlPrompts
from jitagent.sandbox.tools import ToolBox
from jitagent.tasks.task import Task


class RunContext(Protocol):
    """What a stage may use of its run: the task, the tools, the control prompts, the record, and the
    calls it makes (the model through `ask`, the spec's code section through `run_code`)."""

    task: Task
    toolbox: ToolBox
    cancel: CancelToken
    prompts: ControlPrompts
    trajectory: Trajectory

    async def emit(self, event: Step) -> None: ...

    def has_code(self, stage: str) -> bool: ...

    async def run_code(self, stage: str, args: dict) -> Any: ...

    async def ask(self, prompt: str, max_tokens: int, user: str = "user", **fields: object) -> str: ...


class Stage:
    """A stage (`Memory`, `Planning`, ...) declares `kinds = {}` and where the spec names its kind; each kind
    is a subclass declared with that name, `class Window(Memory, kind="window")`, built with its section."""

    kinds: ClassVar[dict[str, type[Stage]]]
    section: ClassVar[str]  # the spec's section for the stage: "memory", "action", ...
    field: ClassVar[str] = "kind"  # the section's field that names the kind

    def __init_subclass__(cls, kind: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if kind is not None:
            cls.kinds[kind] = cls

    def __init__(self, spec: Any) -> None:
        self.spec = spec

    @classmethod
    def for_spec(cls, spec: HarnessSpec) -> Stage:
        section = getattr(spec, cls.section)
        return cls.kinds[getattr(section, cls.field)](section)
