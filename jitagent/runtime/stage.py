"""What every stage kind shares: it is found by the name the spec uses."""

from __future__ import annotations

from typing import Any, ClassVar

from jitagent.spec import HarnessSpec


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
