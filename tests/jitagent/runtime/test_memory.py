"""Memory kinds: what of an action loop's history the model sees at each step."""

import asyncio

from jitagent.harness.spec import MemorySpec
from jitagent.runtime.conversation import Conversation
from jitagent.runtime.memory import Memory, merge_users
from jitagent.tasks.task import Task

ADD = Task(id="t1", prompt="What is 2+3?", verifier={"kind": "numeric", "expected": 5})


def talk_of(*turns: str, notes=()) -> Conversation:
    """The task message, then turns alternating assistant and user."""
    talk = Conversation("task", depth=0, seed=0, notes=list(notes))
    talk.history = [{"role": "user", "content": "task"}] + [
        {"role": "assistant" if i % 2 == 0 else "user", "content": text} for i, text in enumerate(turns)]
    return talk


def view(kind: str, talk: Conversation, **spec) -> list[dict]:
    return asyncio.run(Memory.kinds[kind](MemorySpec(kind=kind, **spec)).view(None, talk))


def test_window_keeps_the_task_and_the_last_messages():
    seen = view("window", talk_of("a1", "o1", "a2", "o2"), window=2)
    assert [m["content"] for m in seen] == ["task", "a2", "o2"]


def test_notes_sit_under_the_task_in_one_user_message():
    seen = view("notes", talk_of("a1", "o1", "a2", "o2", notes=["x is 3"]), window=2)
    assert seen[0] == {"role": "user", "content": "task\n\nYour notes:\n- x is 3"}
    assert [m["content"] for m in seen[1:]] == ["a2", "o2"]


def test_merge_users_folds_consecutive_user_messages_only():
    merged = merge_users([{"role": "user", "content": "a"}, {"role": "user", "content": "b"},
                          {"role": "assistant", "content": "c"}, {"role": "user", "content": "d"}])
    assert [m["content"] for m in merged] == ["a\n\nb", "c", "d"]


def test_a_code_section_computes_the_view_in_place_of_the_kind(solve, seed_with):
    code = {"stage": "memory", "source": "def view(messages):\n    return messages[:1]\n"}
    spec = seed_with("codeact", code=code)
    result, model = solve(spec, ADD, ["```python\nprint(2 + 3)\n```", "Final answer: 5"])
    assert model.calls[1]["messages"][5:] == [{"role": "user", "content": "What is 2+3?"}]
    assert result.passed


def test_retrieval_recalls_the_older_messages_that_share_words_with_the_step():
    talk = talk_of("Let me read the file.\n```python\nprint(open('data.csv').read())\n```",
                   "Observation:\nid,name\n1,ann\n2,bob", "The weather is sunny today, unrelated to this.",
                   "Observation:\n(no output)", "```python\nprint(len(open('data.csv').readlines()))\n```",
                   "Observation:\n3")
    talk.prompt = "How many rows does data.csv have?"
    seen = view("retrieval", talk, window=2)
    assert seen[0]["content"] == (
        "task\n\nRelevant earlier messages:\nassistant: Let me read the file.\n```python\n"
        "print(open('data.csv').read())\n```\nuser: Observation:\nid,name\n1,ann\n2,bob\n"
        "user: Observation:\n(no output)")  # not the weather
    assert [m["content"] for m in seen[1:]] == [talk.history[-2]["content"], "Observation:\n3"]


def test_retrieval_recalls_no_more_words_than_its_budget():
    relevant = " ".join(["data.csv"] + ["word"] * 9)  # 10 words each
    talk = talk_of(relevant, relevant + " rows", relevant, "earlier", "data.csv", "latest")
    talk.prompt = "count the rows of data.csv"
    seen = view("retrieval", talk, window=2, budget=16)  # the most relevant (11 words) leaves room for none
    assert seen[0]["content"] == f"task\n\nRelevant earlier messages:\nuser: {relevant} rows"


def test_retrieval_in_a_run_brings_back_the_first_look_at_the_file(solve, seed_with):
    spec = seed_with("codeact", memory={"kind": "retrieval", "window": 2}, limits={"max_steps": 4})
    task = Task(id="f", prompt="How many lines does notes.txt have?", files={"notes.txt": "a\nb\nc\n"},
                verifier={"kind": "numeric", "expected": 3})
    replies = ["```python\nprint(open('notes.txt').read())\n```", "NOTE: the weather is nice",
               "```python\nprint(len(open('notes.txt').readlines()))\n```", "Final answer: 3"]
    result, model = solve(spec, task, replies)
    assert model.calls[-1]["messages"][5]["content"] == (
        "How many lines does notes.txt have?\n\nRelevant earlier messages:\n"
        "assistant: ```python\nprint(open('notes.txt').read())\n```\nuser: Observation:\na\nb\nc")
    assert result.passed
