"""bench/pair_streams.py: two streams of the same suite read side by side, unknown tokens left out."""

import pytest


@pytest.fixture
def pair_streams(bench_script):
    return bench_script("pair_streams")


def unit(task: str, reward: float, harness: str, route: str, tokens: int | None) -> dict:
    return {"task_id": task, "reward": reward, "harness": harness, "route": route,
            "execution_tokens": tokens, "synthesis_tokens": 0, "repair_tokens": 0}


def test_a_stream_is_read_with_its_unknown_tokens_said_and_its_choices_paired(pair_streams):
    new = [unit("a", 1.0, "h1", "exploit", 100), unit("b", 0.0, "h2", "synthesized", None)]
    old = [unit("a", 1.0, "h1", "exploit", 300), unit("b", 0.0, "h3", "explore", 500)]
    assert pair_streams.reading(new) == ("success 50.0%, 100 tokens a task (1 unknown), "
                                         "routes {'exploit': 1, 'synthesized': 1}, synthesized: 0.00")
    assert pair_streams.same_choices(new, old) == 1


def test_the_last_tasks_are_read_by_their_order_in_the_stream(pair_streams):
    units = [unit(task, 1.0, "h1", "exploit", 100) | {"order": order}
             for order, task in zip((2, 0, 3, 1), "cadb")]
    assert [u["task_id"] for u in pair_streams.last(units, 2)] == ["c", "d"]
    assert pair_streams.last(units, None) == units
