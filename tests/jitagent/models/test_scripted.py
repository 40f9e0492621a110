"""The scripted load-test model: `scripted:MS` waits like a model server on another host."""

import asyncio
import time

import pytest

from jitagent.models import load_model


def test_scripted_ms_waits_per_call_and_bad_values_are_named():
    model = load_model("scripted:50")
    start = time.monotonic()
    reply = asyncio.run(model.complete([{"role": "user", "content": "What is 0 plus 0?"}]))
    assert time.monotonic() - start >= 0.05 and reply.texts == ["Final answer: 0"]
    assert load_model("scripted").latency_s == 0
    for bad in ("scripted:soon", "scripted:-5"):
        with pytest.raises(ValueError, match="scripted:MS"):
            load_model(bad)
