"""Online, the solver's adapter is trained again in the background after every `every` new verified runs: a
`jitagent train` process on the same bank (nice, so serving keeps the cores it needs), whose adapter then
enters the clusters' arms as a free variant (variants.py) and earns its traffic like any arm.

A task's own run is in the bank only once it was answered, so an adapter trained on it answers later tasks
only. One job at a time; a job that fails is logged and the next count starts again. Off by default
(`every` 0): training takes the cores for minutes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from urllib.parse import unquote, urlsplit, urlunsplit

from pydantic import BaseModel, Field

from harness_bank import HarnessBank

log = logging.getLogger(__name__)
NAME = "online"


class RetrainConfig(BaseModel):
    every: int = Field(0, ge=0, le=1_000_000, description="verified runs between two background retrains of "
                       "the solver's adapter (0: never)")
    niceness: int = Field(19, ge=0, le=19, description="the training process's nice value")
    args: tuple[str, ...] = Field((), description="more `jitagent train` options, e.g. ('--epochs', '1')")


class Retrainer:
    """Counts verified runs and starts `jitagent train` on the bank when `every` have come since the last."""

    def __init__(self, bank: HarnessBank, base_model: str, config: RetrainConfig):
        self.bank, self.base_model, self.config = bank, base_model, config
        self.job: asyncio.Task | None = None
        self.since = 0
        self.jobs = 0  # started, for whoever watches

    def verified(self) -> None:
        """One more verified run was recorded; start a job when it is due."""
        self.since += 1
        if self.config.every and self.since >= self.config.every and (self.job is None or self.job.done()):
            self.since = 0
            self.jobs += 1
            self.job = asyncio.get_running_loop().create_task(self._train())

    def command(self) -> tuple[list[str], dict[str, str] | None]:
        """The training process's argv, and its environment where it differs from ours."""
        newest = next((a for a in self.bank.list_adapters() if a.name == NAME), None)
        location, env = child_location(self.bank)
        return ["nice", "-n", str(self.config.niceness), sys.executable, "-m", "jitagent", "train", "--bank",
                location, "--solver-model", self.base_model, "--name", NAME, "--json",
                *(["--parent", newest.id] if newest else []), *self.config.args], env

    async def _train(self) -> None:
        argv, env = self.command()
        proc = await asyncio.create_subprocess_exec(*argv, env=env, stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.PIPE)
        out, err = await proc.communicate()
        if proc.returncode:
            last = err.decode(errors="replace").strip().splitlines()[-1:] or ["(nothing on stderr)"]
            log.warning(json.dumps({"event": "retrain_failed", "status": proc.returncode, "error": last[0]}))
            return
        made = json.loads(out)
        log.info(json.dumps({"event": "retrained", "adapter": made["adapter"], "stats": made["stats"]}))

    async def settle(self) -> None:
        """Wait for a job in progress (tests, a clean shutdown)."""
        if self.job is not None:
            await self.job


def child_location(bank: HarnessBank) -> tuple[str, dict[str, str] | None]:
    """The bank as another process opens it. A shared bank's URL may carry its password (from settings):
    argv shows in /proc to every process, so the password goes in the child's PGPASSWORD instead."""
    if bank.path is not None:
        return str(bank.path), None
    parts = urlsplit(bank.store.url)
    if parts.password is None:
        return bank.store.url, None
    user = f"{parts.username}@" if parts.username else ""
    bare = urlunsplit(parts._replace(netloc=user + parts.netloc.rpartition("@")[2]))
    return bare, {**os.environ, "PGPASSWORD": unquote(parts.password)} if parts.password else None
