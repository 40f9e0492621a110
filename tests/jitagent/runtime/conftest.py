import asyncio

import pytest

from jitagent.harness.seeds import load_seeds
from jitagent.harness.spec import parse_spec
from jitagent.models.scripted import ScriptedModel
from jitagent.runtime.agent import Runtime


@pytest.fixture
def solve():
    """Run a spec on a task with scripted replies: the result and the model (its calls)."""
    def solve(spec, task, replies, **kw):
        model = ScriptedModel(replies)
        return asyncio.run(Runtime(model).run(spec, task, **kw)), model
    return solve


@pytest.fixture
def seed_with():
    """A seed with some fields of its sections replaced: `seed_with("codeact", memory={"kind": "window"})`."""
    def seed_with(name, **sections):
        data = load_seeds()[name].model_dump(mode="json")
        for section, fields in sections.items():
            data[section] = {**(data[section] or {}), **fields}
        return parse_spec(data)
    return seed_with
