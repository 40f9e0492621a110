"""What a command shows on stderr while it works, so that nothing long is silent: on a terminal a bar
(or a spinner for one slow step), piped one log line per unit of work. Stdout stays for what is piped."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.progress import Progress

from jitagent.terminal import TerminalConsole, visible


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
