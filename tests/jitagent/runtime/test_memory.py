"""Memory kinds: what of an action loop's history the model sees at each step."""

import asyncio

from jitagent.runtime.memory import Memory, merge_users
from jitagent.runtime.run import Conversation
from jitagent.spec import MemorySpec
from jitagent.tasks import Task

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
