"""Logs: one line per record — a JSON object (timestamp, level, logger, the task and run being worked
on, the event's own fields) or the same as readable text. Records whose message is a JSON object
(`log.info(json.dumps({...}))`) contribute its fields. Library chatter (model loading notices, HTTP
request lines, progress bars) is held back to warnings, and those come through the same format."""

from __future__ import annotations

import json
import logging
import os
import sys
from contextvars import ContextVar
from datetime import UTC, datetime

FORMATS = ("json", "text")
CHATTY = ("sentence_transformers", "transformers", "huggingface_hub", "httpx", "httpcore", "faiss", "urllib3",
          "filelock", "torch", "reasoning_gym")

_bound: ContextVar[dict] = ContextVar("jitagent_log_fields")  # read with .get({}): no shared mutable default


def bind(**fields) -> None:
    """Add fields (task_id, run_id) to every record logged from here on in this asyncio task (and the
    threads it hands work to); each RPC runs in a task of its own."""
    _bound.set(_bound.get({}) | {k: v for k, v in fields.items() if v})


def fields_of(record: logging.LogRecord) -> dict:
    entry = {"ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
             "level": record.levelname.lower(), "logger": record.name} | _bound.get({})
    message = record.getMessage()
    try:
        parsed = json.loads(message) if message.startswith("{") else None
    except json.JSONDecodeError:
        parsed = None
    entry.update(parsed if isinstance(parsed, dict) else {"message": message})
    return entry


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = fields_of(record)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = fields_of(record)
        head = f"{entry.pop('ts')} {entry.pop('level').upper():7} {entry.pop('logger')}"
        message = entry.pop("message", None)
        parts = [
            head,
            *([message] if message else []),
            *(
                f"{k}={v if isinstance(v, (int, float)) else json.dumps(v, default=str)}"
                for k, v in entry.items()
            ),
        ]
        text = " ".join(parts)
        return text + ("\n" + self.formatException(record.exc_info) if record.exc_info else "")


def configure(format: str = "json", level: int = logging.INFO, stream=None) -> None:
    """Route every record, the libraries' included, through one handler in `format`."""
    os.environ.setdefault("TQDM_DISABLE", "1")  # read when tqdm is imported: no progress bars in logs
    handler = logging.StreamHandler(stream or sys.stdout)
    handler.setFormatter(JsonFormatter() if format == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in CHATTY:
        logging.getLogger(name).setLevel(max(level, logging.WARNING))
    logging.captureWarnings(True)
