"""The validation ladder, repair and fallback, with the scripted model (unit tests)."""

import asyncio
import json
import re

import pytest

from jitagent.harness.seeds import load_seeds
from jitagent.harness.spec import parse_spec
from jitagent.improvement.synthesis.synthesize import SynthesisConfig, Synthesizer
from jitagent.improvement.synthesis.validate import Ceilings, contradictions, validate_static
from jitagent.models.scripted import ScriptedModel
from jitagent.runtime.agent import Runtime
from jitagent.tasks.task import Task

SEEDS = load_seeds()
REFS = [SEEDS["program_of_thought"], SEEDS["codeact"], SEEDS["direct"]]
PARENTS = {r.name: r for r in REFS}
TASK = Task(id="t", prompt="What is 17 * 23?", type="arithmetic", tools=["python"],
            verifier={"kind": "numeric", "expected": 391})
GOOD = json.dumps({"parent": "program_of_thought", "action": "codeact", "answer_from": "stdout",
                   "planning": "none", "tools": ["python"], "max_steps": 2})


def check(text):
    return asyncio.run(validate_static(text, PARENTS, TASK, Ceilings()))


def full(code_source=None, **changes):
    data = SEEDS["direct"].model_dump(mode="json")
    data.update(changes)
    if code_source is not None:
        data["code"] = {"stage": "answer", "source": code_source}
    return json.dumps({"spec": data})


def test_valid_edit_builds_a_child_of_its_parent_named_by_its_content():
    result = check(GOOD)
    assert result.ok and result.spec.envelope.parent_id == SEEDS["program_of_thought"].id
    assert re.fullmatch(r"program_of_thought~[0-9a-f]{6}", result.spec.name)
    assert "Variant: action codeact" in result.spec.description
    assert check(GOOD).spec.id == result.spec.id  # the same edit for another task is the same harness


def test_lineage_never_lengthens_names_or_descriptions():
    child = check(GOOD).spec
    grandchild = asyncio.run(validate_static(GOOD.replace('"max_steps": 2', '"max_steps": 3').replace(
        "program_of_thought", child.name), {child.name: child}, TASK, Ceilings())).spec
    assert grandchild.envelope.parent_id == child.id and grandchild.name.split("~")[0] == "program_of_thought"
    assert len(grandchild.name) == len(child.name) and grandchild.description.count("Variant:") == 1


@pytest.mark.parametrize("text, rung, fragment", [
    ("{not json", "json", "not valid JSON"),
    (json.dumps({"parent": "program_of_thought", "action": "teleport", "tools": []}), "json", "action"),
    (json.dumps({"parent": "nonexistent", "action": "direct"}), "json", "not one of the references"),
    (json.dumps({"parent": "direct", "action": "react", "tools": []}), "spec", "needs at least one tool"),
    (json.dumps({"parent": "codeact", "tools": ["python", "shell"]}), "semantic",
     "does not allow tool 'shell'"),
    (json.dumps({"parent": "program_of_thought", "action": "react", "answer_from": "text",
                 "tools": ["python"], "max_steps": 1}), "semantic", "reads a tool's result in a later step"),
    # the synthesis prompt's own markup in a harness's text is refused (issue 46)
    (json.dumps({"parent": "codeact", "instruction": "Output the sum [action=codeact, answer_from=stdout]"}),
     "semantic", "the reference summary's markup"),
    # words that contradict the fields (the solver reads the words, the runtime runs the fields; issue 46)
    (json.dumps({"parent": "program_of_thought", "action": "direct", "answer_from": "text"}), "semantic",
     "'direct' never runs code"),
    (json.dumps({"parent": "direct", "tools": ["python"]}), "semantic", "the text says no tools"),
    (full(memory={"kind": "infinite"}), "spec", "memory.kind"),
    (full("def extract_answer(text)\n    return text"), "spec", "SyntaxError"),
    (full("def answer(text):\n    return text"), "spec", "must define `def extract_answer(text)`"),
    (full("def extract_answer(txt, extra):\n    return txt"), "spec", "must take parameters ('text',)"),
    (full(prompts={"step": "{task:{0}}"}), "spec", "format specs are not allowed"),
    (full(prompts={"step": "{task.__class__.__mro__}"}), "spec", "attribute and index access"),
    (full("def extract_answer(text):\n    return 1 / 0"), "code", "ZeroDivisionError"),
])
def test_each_rung_rejects_its_broken_spec_with_the_exact_error(text, rung, fragment):
    result = check(text)
    assert not result.ok
    assert result.error.startswith(f"[{rung}]") and fragment in result.error


def test_one_step_suffices_where_the_printed_output_is_the_answer():
    result = check(json.dumps({"parent": "program_of_thought", "action": "codeact", "answer_from": "stdout",
                               "tools": ["python"], "max_steps": 1}))
    assert result.ok, result.error


def test_too_big_limits_are_clamped_and_copied_instructions_dropped():
    text = json.dumps({"parent": "codeact", "action": "codeact", "answer_from": "text", "planning": "none",
                       "tools": ["python", "python"], "max_steps": 200,
                       "instruction": "What is 17 * 23? It is 400."})
    result = check(text)
    assert result.ok
    assert result.spec.limits.max_steps == Ceilings().max_steps and result.spec.tools.tools == ["python"]
    assert result.spec.prompts.instructions == []
    assert any("clamped" in n for n in result.notes) and any("copying a task" in n for n in result.notes)


def synthesizer(replies, **config):
    meta = ScriptedModel(replies, name="scripted-meta")
    cfg = SynthesisConfig(n=1, dry_run=False, **config)
    return Synthesizer(meta, Runtime(ScriptedModel(["print(391)"])), cfg), meta


def run_synthesis(synth):
    async def go():
        return [item async for item in synth.stream(TASK, REFS, {})]
    return asyncio.run(go())


def test_repair_turns_a_broken_candidate_into_a_valid_one_with_the_exact_error_in_the_prompt():
    broken = json.dumps({"parent": "codeact", "action": "codeact", "answer_from": "text", "planning": "none",
                         "tools": ["python", "shell"], "max_steps": 3})
    synth, meta = synthesizer([broken, GOOD])
    items = run_synthesis(synth)
    synthesis = items[-1]
    candidate = synthesis.candidates[0]
    assert candidate.broken_before_repair and not candidate.broken_after_repair
    assert candidate.origin == "repaired" and synthesis.chosen.envelope.origin == "repaired"
    repair_prompt = meta.calls[1]["messages"][-1]["content"]
    assert "tools.tools: the task does not allow tool 'shell'" in repair_prompt
    assert meta.calls[1]["messages"][-2] == {"role": "assistant", "content": broken}
    first, repair = items[:-1]
    assert (first.index, first.round, repair.round) == (0, 0, 1) and not first.ok and repair.ok
    assert "does not allow tool 'shell'" in first.error and repair.error == ""
    assert synthesis.cost.repair.completion_tokens > 0


def test_candidate_still_broken_after_two_rounds_leads_to_fallback():
    synth, meta = synthesizer(["{broken", "{broken again", "{still broken"])
    synthesis = run_synthesis(synth)[-1]
    assert synthesis.chosen is None
    assert len(synthesis.candidates[0].rounds) == 3 and len(meta.calls) == 3  # draft + 2 repairs, no more


def test_a_repair_that_repeats_its_broken_output_is_not_asked_again():
    synth, meta = synthesizer(["{broken"])
    synthesis = run_synthesis(synth)[-1]
    assert len(synthesis.candidates[0].rounds) == 2 and len(meta.calls) == 2


def test_stdout_answers_without_code_are_read_as_text():
    # (from program_of_thought, `validate` refuses it: its prompt asks for a program `direct` never runs)
    direct = GOOD.replace('"action": "codeact"', '"action": "direct"')
    direct = direct.replace('"program_of_thought"', '"direct"').replace('"tools": ["python"]', '"tools": []')
    result = check(direct)
    assert result.ok and result.spec.action.answer_from == "text" and any("stdout" in n for n in result.notes)


def test_dry_run_rung_catches_a_harness_that_fails_at_run_time():
    data = SEEDS["direct"].model_dump(mode="json")
    data["code"] = {"stage": "planning",
                    "source": "def guidance(task, history):\n    if 'Add' in task:\n        return 'ok'\n    "
                    "raise ValueError('cannot plan ' + task)\n"}
    meta = ScriptedModel([json.dumps({"spec": data})], name="scripted-meta")
    synth = Synthesizer(meta, Runtime(ScriptedModel(["Final answer: 391"])),
                        SynthesisConfig(n=1, repair_rounds=0, dry_run=True))
    synthesis = run_synthesis(synth)[-1]
    candidate = synthesis.candidates[0]
    assert not candidate.valid and candidate.checks[-1].rung == "dry_run"
    assert "cannot plan" in candidate.checks[-1].error and synthesis.chosen is None


def test_n_candidates_distinct_seeds_and_schema_constrained():
    synth, meta = synthesizer([GOOD])
    synth.config = SynthesisConfig(n=3, dry_run=False)
    synthesis = run_synthesis(synth)[-1]
    assert len(synthesis.candidates) == 3 and synthesis.chosen is not None
    assert meta.calls[0]["temperature"] == 1.0
    assert meta.calls[0]["json_schema"]["properties"]["parent"]["enum"]


def test_prompt_prefix_is_byte_identical_across_tasks():
    from jitagent.improvement.synthesis.prompt import synthesis_messages

    a = synthesis_messages("task one", ["python"], REFS)
    b = synthesis_messages("a different task", ["python"], REFS)
    assert a[0] == b[0]
    prefix = a[1]["content"].split("Task:")[0]
    assert b[1]["content"].startswith(prefix)


def test_a_chain_of_five_mutations_carries_no_tasks_text_and_no_repeated_line():
    """Each meta-model answer adds a generic line (again) and a line from a task it was shown: the current
    one quoted, or its parent's failure restated. Five generations later only the generic line is left."""
    tasks = [Task(id=f"t{i}", prompt=text, type="letters", tools=["python"]) for i, text in enumerate([
        "How many times does the letter r appear in the word 'strawberry'?",
        "What is 17 + 25?", "Count the letter e in 'cheese'.", "What is 4 + 3 times 12?",
        "How many vowels are in the word 'banana'?", "Spell 'jitagent' backwards."])]
    parent, generic = SEEDS["program_of_thought"], "Print only the final answer, nothing else."
    for i in range(1, 6):
        task, failure = tasks[i], tasks[i - 1].prompt
        copied = (f"Count the letters of '{task.prompt.split(chr(39))[1]}' one by one." if "'" in task.prompt
                  else failure)
        for instruction in (copied, generic):
            edit = json.dumps({"parent": parent.name, "instruction": instruction})
            child = asyncio.run(validate_static(edit, {parent.name: parent}, task, Ceilings(), (failure,)))
            assert child.ok, child.error
            assert copied not in child.spec.description
            parent = child.spec
    assert parent.prompts.instructions == [generic]
    carried = " ".join([*parent.prompts.instructions, parent.description]).lower()
    assert not any(word in carried for word in ("strawberry", "cheese", "banana", "jitagent", "17 + 25"))


def test_a_hard_coded_answer_or_a_task_in_a_full_spec_is_dropped_from_every_field():
    """A distinctive word of the task beside an answer, and the task's text in a full spec's system prompt,
    description and few-shot pairs: none of it survives validation."""
    task = Task(id="s", prompt="How many times does the letter r appear in the word strawberry?",
                type="letters", tools=["python"])
    parent = SEEDS["program_of_thought"]
    edit = json.dumps({"parent": parent.name, "instruction": "For the word strawberry answer 3."})
    child = asyncio.run(validate_static(edit, {parent.name: parent}, task, Ceilings()))
    assert child.ok and child.spec.prompts.instructions == []
    spec = parent.model_dump(mode="json") | {"description": f"Solves it. {task.prompt}"}
    spec["prompts"] = spec["prompts"] | {"system": f"{parent.prompts.system} {task.prompt}",
                                         "few_shot": [{"user": task.prompt, "assistant": "print(3)"}]}
    full = asyncio.run(validate_static(json.dumps({"spec": spec}), {parent.name: parent}, task, Ceilings()))
    assert full.ok, full.error
    text = " ".join([full.spec.description, full.spec.prompts.system,
                     *(s.user for s in full.spec.prompts.few_shot)]).lower()
    assert "strawberry" not in text and full.spec.prompts.system.startswith(parent.prompts.system[:30])


def test_no_seed_contradicts_itself_and_validate_names_each_contradiction():
    assert {name: contradictions(spec) for name, spec in SEEDS.items() if contradictions(spec)} == {}
    pot = SEEDS["program_of_thought"].model_dump(mode="json")
    pot["action"] |= {"kind": "direct", "answer_from": "text"}
    assert "'direct' never runs code" in contradictions(parse_spec(pot))[0]
    direct = SEEDS["direct"].model_dump(mode="json")
    direct["action"]["kind"], direct["tools"]["tools"] = "codeact", ["python"]
    assert "the text says no tools" in contradictions(parse_spec(direct))[0]
