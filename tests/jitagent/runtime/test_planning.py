"""Planning kinds: the plan an action loop starts from, revised plans, reflections, sub-questions."""

from jitagent.tasks.task import Task

ADD = Task(id="t1", prompt="What is 2+3?", verifier={"kind": "numeric", "expected": 5})


def test_upfront_planning_without_tools_plans_for_text_only(solve, seed_with):
    spec = seed_with("direct", planning={"kind": "upfront"})
    result, model = solve(spec, ADD, ["1. add the numbers", "Final answer: 5"])
    assert model.calls[0]["messages"][0]["content"].endswith("The agent has no tools: it can only reason and "
                                                             "answer in text.")
    assert model.calls[1]["messages"][-1]["content"] == "What is 2+3?\n\nPlan:\n1. add the numbers"
    assert result.passed


def test_replan_revises_the_plan_every_few_steps_with_the_progress(solve, seed_with):
    spec = seed_with("codeact", planning={"kind": "replan", "every": 2}, memory={"kind": "full"},
                     limits={"max_steps": 3})

    def reply(messages):
        if messages[0]["content"].startswith("Write a short numbered plan"):
            return "1. print it" if len(messages[-1]["content"]) < 40 else "1. answer now"
        return "Final answer: 5" if "answer now" in messages[-1]["content"] else "```python\nprint(5)\n```"
    result, model = solve(spec, ADD, reply)
    plans = [e for e in result.trajectory.events if e.kind == "plan"]
    assert [(e.step, e.text) for e in plans] == [(0, "1. print it"), (2, "1. answer now")]
    assert "Progress so far:\n" in model.calls[-2]["messages"][1]["content"]
    assert model.calls[-1]["messages"][-1] == {"role": "user", "content": "Revised plan:\n1. answer now"}
    assert result.passed


def test_a_code_section_gives_the_opening_plan(solve, seed_with):
    spec = seed_with("direct", code={"stage": "planning",
                                     "source": "def guidance(task, history):\n    return 'add: ' + task\n"})
    result, model = solve(spec, ADD, ["Final answer: 5"])
    assert model.calls[0]["messages"][-1]["content"] == "What is 2+3?\n\nPlan:\nadd: What is 2+3?"
    assert [e.text for e in result.trajectory.events if e.kind == "plan"] == ["add: What is 2+3?"]


def test_reflection_sees_the_failed_answer_and_the_problem(solve, seed_with):
    spec = seed_with("self_refine")
    replies = iter(["Final answer: 4", "WRONG: it is 5", "Add again.", "Final answer: 5", "CORRECT"])
    result, model = solve(spec, ADD, lambda m: next(replies))
    reflect = model.calls[2]["messages"][1]["content"]
    assert reflect == ("Task: What is 2+3?\nAnswer given: 4\nProblem: self-check: WRONG: it is 5\n"
                       "What should the next attempt do differently?")
    reflections = [(e.step, e.text) for e in result.trajectory.events if e.kind == "reflection"]
    assert reflections == [(0, "Add again.")]
