"""What the model is told: a spec's own prompts filled for the current step, and the runtime's control
prompts (judge, check, reflect, plan, ...), whose texts are data in seeds/control_prompts.yaml."""

from __future__ import annotations

import collections
from functools import cache
from importlib import resources

from jitagent.common.safe_loading import yaml_load
from jitagent.harness.spec import CONTROL_PROMPTS, Prompts
from jitagent.runtime.conversation import Conversation
from jitagent.sandbox.tools import describe_tools


def fill(template: str, fields: dict[str, object]) -> str:
    return template.format_map(collections.defaultdict(str, fields))


def template_fields(talk: Conversation, tools: list[str]) -> dict[str, str]:
    """A value, as of this step, for every field a spec's templates may use (`spec.TEMPLATE_FIELDS`);
    `tools`: those the run allows."""
    return {"task": talk.prompt, "tools": describe_tools(tools) if tools else "(none)", "plan": talk.plan,
            "notes": "\n".join(f"- {note}" for note in talk.notes), "summary": talk.summary,
            "observation": talk.observation, "step": str(talk.step + 1), "reflection": talk.lesson}


def system_messages(prompts: Prompts, fields: dict[str, str], examples: tuple[dict, ...] = ()) -> list[dict]:
    """The system prompt and the few-shot pairs that open every request of an action loop: `examples` (the
    messages of solved tasks of the cluster) where there are any, else the spec's own `few_shot`."""
    system = fill(prompts.system, fields)
    if prompts.instructions:
        system += "\n" + "\n".join(prompts.instructions)
    if fields["reflection"]:
        system += f"\nLessons from a previous failed attempt: {fields['reflection']}"
    if examples:
        return [{"role": "system", "content": system}, *examples]
    messages = [{"role": "system", "content": system}]
    for shot in prompts.few_shot:
        messages += [{"role": "user", "content": shot.user}, {"role": "assistant", "content": shot.assistant}]
    return messages


def task_message(prompts: Prompts, fields: dict[str, str]) -> dict:
    """An action loop's first user message: the step template, and the plan unless the template places it."""
    user = fill(prompts.step, fields)
    if fields["plan"] and "{plan}" not in prompts.step:
        user += f"\n\nPlan:\n{fields['plan']}"
    return {"role": "user", "content": user}


@cache
def default_control_prompts() -> dict[str, dict[str, str]]:
    text = resources.files("jitagent.seeds").joinpath("control_prompts.yaml").read_text()
    control = Prompts(control=yaml_load(text)).control  # checked as a spec's replacements are
    if missing := [f"{name}.{part}" for name, parts in CONTROL_PROMPTS.items() for part in parts
                   if part not in control.get(name, {})]:
        raise ValueError(f"seeds/control_prompts.yaml lacks {missing}")
    return control


class ControlPrompts:
    """The runtime's own requests to the model: the defaults, with the parts a spec replaces."""

    def __init__(self, replaced: dict[str, dict[str, str]]):
        defaults = default_control_prompts()
        self.parts = {name: {**parts, **replaced.get(name, {})} for name, parts in defaults.items()}

    def text(self, name: str, part: str = "user", **fields: object) -> str:
        return fill(self.parts[name][part], fields)

    def messages(self, name: str, user: str = "user", **fields: object) -> list[dict]:
        """A system and a user message, both filled with `fields`; `user` names the user part to use."""
        return [{"role": "system", "content": self.text(name, "system", **fields)},
                {"role": "user", "content": self.text(name, user, **fields)}]
