"""What a LoRA learns from a record: the run's own assistant turns, in the ChatML the solver is prompted with;
never the prompt, nor the harness's few-shot answers in it (a tokenizer of one id per character)."""

from jitagent.improvement.training.lora import IGNORED, data_digest, encode
from jitagent.models.base import render_chatml


def chars(text: str) -> list[int]:
    return [ord(c) for c in text]


def test_only_the_runs_own_assistant_turns_are_learned_as_the_model_is_prompted():
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "shot"},
                {"role": "assistant", "content": "fixed"}, {"role": "user", "content": "task"},
                {"role": "assistant", "content": "mine"}, {"role": "user", "content": "seen"},
                {"role": "assistant", "content": "again"}]
    ids, labels = encode(messages, chars, learn_from=4)
    text = "".join(map(chr, ids))
    assert text.startswith(render_chatml(messages[:-1]))  # the prompt the solver saw before its last turn
    assert text.endswith("<|im_start|>assistant\nagain<|im_end|>\n")
    learned = "".join(chr(i) for i, label in zip(ids, labels) if label != IGNORED)
    assert learned == "mine<|im_end|>again<|im_end|>"  # not "fixed": the harness's, in every record


def test_where_the_learned_turns_begin_is_part_of_the_datas_digest():
    record = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}
    assert data_digest([record]) != data_digest([record | {"prompt_messages": 2}])
