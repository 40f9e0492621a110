"""What the model is told: a spec's templates filled each step, and the runtime's control prompts."""

from jitagent.harness.spec import CONTROL_PROMPTS, TEMPLATE_FIELDS
from jitagent.runtime.conversation import Conversation
from jitagent.runtime.prompts import ControlPrompts, default_control_prompts, template_fields
from jitagent.tasks.task import Task

ADD = Task(id="t1", prompt="What is 2+3?", verifier={"kind": "numeric", "expected": 5})


def test_the_default_control_prompts_have_every_part():
    defaults = default_control_prompts()
    assert {name: set(parts) for name, parts in defaults.items()} == {
        name: set(parts) for name, parts in CONTROL_PROMPTS.items()}
    assert ControlPrompts({}).text("first_tool", tool="shell") == "First call the `shell` tool."


def test_every_template_field_has_a_value():
    assert set(template_fields(Conversation("task", depth=0, seed=0), tools=[])) == TEMPLATE_FIELDS


def test_a_spec_replaces_one_part_of_a_control_prompt(solve, seed_with):
    spec = seed_with("tree_of_thoughts",
                     prompts={"control": {"judge": {"system": "Pick one of:\n{candidates}"}}})
    replies = iter(["Final answer: 4", "Final answer: 5", "Final answer: 6", "2"])
    result, model = solve(spec, ADD, lambda m: next(replies))
    judge = model.calls[-1]["messages"]
    assert judge[0]["content"] == "Pick one of:\n1. 4\n2. 5\n3. 6"
    assert judge[1]["content"].startswith("Task: What is 2+3?\n\nCandidates:")  # the default part stays
    assert result.answer == "5"


def test_templates_see_this_steps_step_notes_and_observation(solve, seed_with):
    spec = seed_with("codeact",
                     prompts={"step": "{task} [step {step}] [notes: {notes}] [seen: {observation}]"})
    result, model = solve(spec, ADD, ["NOTE: add them\n```python\nprint(2 + 3)\n```", "Final answer: 5"])
    first, second = (call["messages"][5]["content"] for call in model.calls)  # after system and few-shot
    assert first == "What is 2+3? [step 1] [notes: ] [seen: ]"
    assert second == "What is 2+3? [step 2] [notes: - add them] [seen: 5]"
    assert result.passed


def test_templates_see_the_running_summary(solve, seed_with):
    spec = seed_with("codeact", memory={"kind": "summary", "every": 2},
                     prompts={"system": "Solve it with code. Summary so far: {summary}"})
    replies = ["```python\nprint(1)\n```", "```python\nprint(2)\n```", "printed 1 and 2", "Final answer: 5"]
    result, model = solve(spec, ADD, replies)
    assert model.calls[0]["messages"][0]["content"] == "Solve it with code. Summary so far: "
    assert model.calls[-1]["messages"][0]["content"] == "Solve it with code. Summary so far: printed 1 and 2"
    assert result.passed
