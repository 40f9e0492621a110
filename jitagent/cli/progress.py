"""What a command shows on stderr while it works, so that nothing long is silent: on a terminal a bar
(or a spinner for one slow step), piped one log line per unit of work. Stdout stays for what is piped."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import TypeVar

from rich.progress import Progress

from jitagent.cli.terminal import TerminalConsole, visible

T = TypeVar("T")


class Units:
    """`done(text)` after each unit: the bar advances and `text` is logged above it, or, piped, one line
    `[i/total] label: text` (with the time since the start)."""

    def __init__(self, label: str, total: int, bar: Progress | None):
        self.label, self.total, self.count = label, total, 0
        self._bar = bar
        self._job = bar.add_task(label, total=total) if bar else None
        self._start = time.monotonic()

    def done(self, text: str = "") -> None:
        self.count += 1
        if self._bar is not None:
            self._bar.advance(self._job)
            if text:
                self._bar.console.log(text)
        else:
            elapsed = time.monotonic() - self._start
            line = f"[{self.count}/{self.total}] {self.label}: {text} ({elapsed:.0f}s)"
            print(visible(line), file=sys.stderr, flush=True)


@contextmanager
def units(label: str, total: int) -> Iterator[Units]:
    if not sys.stderr.isatty():
        yield Units(label, total, None)
        return
    with Progress(console=TerminalConsole(stderr=True), transient=True) as bar:
        yield Units(label, total, bar)


@contextmanager
def waiting(text: str) -> Iterator[None]:
    """One slow step (loading models, the embedder): a spinner on a terminal, else a line saying what."""
    if not sys.stderr.isatty():
        print(f"{text}...", file=sys.stderr, flush=True)
        yield
        return
    with TerminalConsole(stderr=True).status(text):
        yield


async def heartbeat(events: AsyncIterator[T], every_s: float = 10.0) -> AsyncIterator[T]:
    """`events` as they come; while none comes (a model call in progress says nothing), that the work goes
    on: on a terminal a spinner with the seconds waited, piped a line every `every_s` seconds."""
    tty = sys.stderr.isatty()
    source = aiter(events)
    while True:
        waiting_since, status = time.monotonic(), None
        step = asyncio.ensure_future(anext(source))
        try:
            while not (await asyncio.wait({step}, timeout=1.0 if tty else every_s))[0]:
                text = f"working: {time.monotonic() - waiting_since:.0f}s since the last step"
                if not tty:
                    print(f"... {text}", file=sys.stderr, flush=True)
                elif status is None:
                    status = TerminalConsole(stderr=True).status(text)
                    status.start()
                else:
                    status.update(text)
        finally:
            if status is not None:
                status.stop()
            if not step.done():  # the caller stopped early: so does the work
                step.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await step
        try:
            event = step.result()
        except StopAsyncIteration:
            return
        yield event
