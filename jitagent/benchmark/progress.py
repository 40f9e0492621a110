"""Progress for long bench runs: a bar on a terminal; piped, one line per unit on stderr (a log says where
the run is)."""

from __future__ import annotations

import sys


def progress_bar(enabled: bool = True):
    """A rich bar on a terminal, else `Lines`; both take `add_task` and `advance`."""
    from rich.progress import Progress

    if enabled and not sys.stderr.isatty():
        return Lines()
    return Progress(disable=not enabled, transient=True)


class Lines:
    """A progress bar's calls as one line per unit on stderr."""

    def __init__(self):
        self.jobs: list[list] = []

    def __enter__(self) -> Lines:
        return self

    def __exit__(self, *exc) -> None:
        pass

    def add_task(self, name: str, total: int) -> int:
        self.jobs.append([name, 0, total])
        return len(self.jobs) - 1

    def advance(self, job: int, units: int = 1) -> None:
        self.jobs[job][1] += units
        name, done, total = self.jobs[job]
        print(f"[{name} {done}/{total}]", file=sys.stderr, flush=True)
