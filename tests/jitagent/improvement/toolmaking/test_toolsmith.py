"""Tool-making with a scripted writer (no real model here): what is accepted is decided by trials in the real
sandbox on labelled tasks the writer did not see."""

import asyncio
import re

from jitagent.harness.seeds import load_seeds
from jitagent.improvement.toolmaking import Labelled, ToolmakingConfig, Toolsmith, Writer
from jitagent.improvement.toolmaking.writer import Example, copied
from jitagent.models.scripted import ScriptedModel
from jitagent.tasks.task import Task

PAIRS = [(12, 30), (7, 8), (100, 1), (3, 4), (250, 250), (9, 90), (61, 2), (5, 55)]
TASKS = [Task(id=f"add-{i}", prompt=f"Add {a} and {b}. Answer with the number only.", type="add",
              verifier={"kind": "exact", "expected": str(a + b)}) for i, (a, b) in enumerate(PAIRS)]
ADDING = ("import re\ndef solve(task):\n    a, b = map(int, re.findall(r'\\d+', task)[:2])\n"
          "    return str(a {} b)\n")
GENERAL = ADDING.format("+")
PARENT = load_seeds()["program_of_thought"]


def labelled(reward: float = 0.0, answers=None) -> list[Labelled]:
    return [Labelled(task=t, reference=t.verifier.expected, reward=reward,
                     answer=None if answers is None else answers[i]) for i, t in enumerate(TASKS)]


def make(replies, config=None, items=None):
    model = ScriptedModel(replies, name="scripted-writer")
    smith = Toolsmith(Writer(model), config or ToolmakingConfig(stages=("solve",), candidates=2))
    return asyncio.run(smith.make("type:add", PARENT, items or labelled(), seed=3)), model


def block(source: str) -> str:
    return f"```python\n{source}```"


def test_a_general_solver_is_accepted_on_tasks_its_writer_did_not_see():
    [made], model = make([block(GENERAL)])
    assert made.accepted is not None and made.reason.startswith("accepted")
    assert len(made.shown) == 3 and len(made.heldout) == 5 and not set(made.shown) & set(made.heldout)
    assert [s.reward for s in made.evidence] == [1.0] * 5 and made.parent_rewards == [0.0] * 5
    source = made.accepted.code_for("solve").source
    assert source.endswith(GENERAL) and "def read_parts(task)" in source  # the helper the writer was told of
    assert made.accepted.envelope.parent_id == PARENT.id
    assert made.accepted.name.startswith("program_of_thought~")
    shown_prompts = model.calls[0]["messages"][-1]["content"]
    assert all(t.prompt not in shown_prompts for t in TASKS if t.id in made.heldout)
    assert made.cost.completion_tokens > 0 and made.cost.prompt_tokens > 0


def memorizing(messages) -> str:
    """A writer that returns the answers of the tasks it was shown, and the first of them otherwise."""
    example = r"### Task \d+\n(.*?)\n(?:### read_parts\(task\)\n.*?\n)?### Correct answer\n(.*?)(?:\n\n|$)"
    shown = re.findall(example, messages[-1]["content"], re.S)
    known = dict(shown)
    return block(f"def solve(task):\n    return {known!r}.get(task, {shown[0][1]!r})\n")


def test_a_constant_or_memorized_answer_fails_acceptance():
    config = ToolmakingConfig(stages=("solve",), candidates=1, repairs=0)
    for writer in ([block("def solve(task):\n    return '42'\n")], memorizing):
        [made], _ = make(writer, config)
        assert made.candidates[0].shown_mean == (1.0 if writer is memorizing else 0.0)
        assert made.accepted is None and made.reason.startswith("rejected"), made.reason


def test_a_draft_that_looks_up_the_tasks_it_saw_is_repaired_not_trusted():
    """A lookup of the shown tasks scores 1.00 on them; it is told what it copied and written again."""
    def writer(messages):
        told = "copied from Task" in messages[-1]["content"]
        return block(GENERAL) if told else memorizing(messages)
    [made], model = make(writer, ToolmakingConfig(stages=("solve",), candidates=1, repairs=1))
    assert made.candidates[0].shown_mean == 1.0 and len(made.candidates) == 2 and len(model.calls) == 2
    assert made.accepted is not None and made.accepted.code_for("solve").source.endswith(GENERAL)


def test_shared_wording_and_one_word_are_not_copies():
    examples = [Example(task=t, answer=t.verifier.expected) for t in TASKS[:3]]
    rule = "def solve(task):\n    return 'Answer with the number only.' if 'ascending' else ''\n"
    assert copied(rule, examples) == []
    assert copied("def solve(task):\n    return {'Add 12 and 30.': '42'}\n", examples) == []  # not whole
    assert copied(f"def solve(task):\n    return {{{TASKS[0].prompt!r}: '42'}}\n", examples) == [
        (1, TASKS[0].prompt)]


def test_unverified_acceptance_takes_the_first_draft_that_runs():
    config = ToolmakingConfig(stages=("solve",), candidates=1, repairs=0, verify_heldout=False)
    [made], _ = make([block("def solve(task):\n    return '42'\n")], config)
    assert made.accepted is not None and made.reason.startswith("unverified")


def test_drafts_that_hang_crash_or_flood_are_rejected_candidates():
    bad = ["def solve(task):\n    while True:\n        pass\n", "def solve(task):\n    return 1 / 0\n",
           "def solve(task):\n    print('x' * 10**8)\n", "def answer(task):\n    return task\n"]
    [made], _ = make([block(source) for source in bad],
                     ToolmakingConfig(stages=("solve",), candidates=4, repairs=0))
    assert made.accepted is None and len(made.candidates) == 4
    assert "must define `def solve(task)`" in made.candidates[3].draft.problem
    assert all(s.reward == 0.0 for c in made.candidates[:3] for s in c.heldout)
    assert "TimeoutError" in made.candidates[0].heldout[0].error


def test_a_draft_repaired_from_what_it_got_wrong_can_be_accepted():
    [made], model = make([block(ADDING.format("*")), block(GENERAL)],
                         ToolmakingConfig(stages=("solve",), candidates=1, repairs=1))
    assert made.accepted is not None and made.candidates[-1].draft.round == 1
    told = model.calls[-1]["messages"][-1]["content"]
    assert "Your function returned" in told and "The correct answer is" in told


def test_an_answer_stage_puts_the_parent_answers_in_form():
    answers = [f"{a + b}.0" for a, b in PAIRS]  # right in value, wrong in form
    normalize = "def extract_answer(text):\n    return text[:-2] if text.endswith('.0') else text\n"
    config = ToolmakingConfig(stages=("answer",), candidates=1, repairs=0)
    [made], model = make([block(normalize)], config, labelled(0.0, answers))
    assert made.accepted is not None and [s.reward for s in made.evidence] == [1.0] * 5
    assert "The agent's answer" in model.calls[0]["messages"][-1]["content"]
