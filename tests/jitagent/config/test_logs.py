"""Log lines: JSON (or text) with timestamp, level, logger, the bound task and run, the event's fields."""

import contextvars
import io
import json
import logging

import pytest

from jitagent.config import logs


@pytest.fixture
def captured():
    stream, root = io.StringIO(), logging.getLogger()
    saved = root.handlers[:], root.level
    yield stream
    root.handlers[:], root.level = saved[0], saved[1]
    logging.captureWarnings(False)


def test_json_lines_carry_time_level_logger_task_and_run(captured):
    logs.configure("json", stream=captured)

    def one_task():  # as an RPC's own asyncio task would: the bound ids stay in its context
        logs.bind(task_id="t1", run_id="r1")
        logging.getLogger("jitagent.server").info(json.dumps({"event": "task", "route": "exploit"}))
        logging.getLogger("jitagent.server").warning("plain words")
        logging.getLogger("sentence_transformers").info("Load pretrained SentenceTransformer: ...")  # chatter

    contextvars.copy_context().run(one_task)
    first, second = [json.loads(line) for line in captured.getvalue().splitlines()]
    assert (
        first["ts"].endswith("+00:00") and first["level"] == "info" and first["logger"] == "jitagent.server"
    )
    assert (first["task_id"], first["run_id"], first["event"], first["route"]) == (
        "t1",
        "r1",
        "task",
        "exploit",
    )
    assert second["message"] == "plain words" and second["level"] == "warning"


def test_text_lines_say_the_same(captured):
    logs.configure("text", stream=captured)
    logging.getLogger("jitagent.server").info(json.dumps({"event": "listening", "port": 50051}))
    line = captured.getvalue().strip()
    assert " INFO    jitagent.server " in line and 'event="listening"' in line and "port=50051" in line
