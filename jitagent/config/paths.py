"""Where jitagent keeps its data unless told otherwise, and opening the bank there.

The data is the process's own: once a bank is open, what the process creates is readable by its user
only (umask 077: files 0600, directories 0700) — the bank with its WAL and SHM files, its faiss
index, the evolve state, the data dir itself; a data dir this user already had is made 0700 when opened,
the folder of a `--bank FILE` elsewhere is left as it is (it may be a shared one, such as ~)."""

import glob
import hashlib
import os
import sqlite3
import stat
import tempfile
from pathlib import Path

from jitagent.common.errors import REFUSED_LOGIN, UNREACHABLE, ServiceError, one_line

PRIVATE_UMASK = 0o077
USER_UMASK = os.umask(PRIVATE_UMASK)  # read (and put back at once) before any bank is opened
os.umask(USER_UMASK)
THROWAWAY_CLUSTER = "jitagent-throwaway"  # cluster_name of the PostgreSQL servers fleet/services.py starts


def data_dir() -> Path:
    return Path(os.environ.get("JITAGENT_DATA", Path.home() / ".jitagent"))


def bank_location(bank: str | None, where: Path | None = None) -> str | Path:
    """The bank to open: `bank` (a file or a postgresql:// URL), else bank.db in the data dir `where`."""
    return bank or (where or data_dir()) / "bank.db"


def evolve_state(bank, where: Path | None = None) -> Path:
    """Where `jitagent evolve` keeps its resumable state: beside an SQLite bank; for a shared one (no
    file of its own), in the data dir `where`."""
    return Path(f"{bank.path}.evolve.jsonl") if bank.path else (where or data_dir()) / "evolve.jsonl"


def training_dir(bank, name: str, where: Path | None = None) -> Path:
    """Where `jitagent train` keeps the checkpoint of adapter `name`, so the same command resumes: beside an
    SQLite bank; for a shared one, in the data dir `where`."""
    return Path(f"{bank.path}.train-{name}") if bank.path else (where or data_dir()) / f"train-{name}"


class DataDirError(ValueError):
    """A data dir or bank that cannot be used; the message is one line saying why."""


def open_bank(path: str | Path, cache_dir: Path | None = None, create: bool = True,
              models: list[str] = ()):
    """The HarnessBank at `path` (created if new, unless not `create`), or DataDirError: a directory
    that cannot be made or written, a path that is not a file or not SQLite, an index file faiss cannot
    read, a scripted model among the `models` that will write to it where it is not throwaway. A
    `postgresql://` URL opens a shared bank whose faiss index this process caches in `cache_dir`
    (default: the data dir), one file per database."""
    bank = _open_bank(path, cache_dir, create, models)
    if bank.path is None:  # a shared database: its server says whether it is throwaway
        try:
            refuse_scripted(path, models, bank.store)
        except DataDirError:
            bank.close()
            raise
    return bank


def _open_bank(path: str | Path, cache_dir: Path | None, create: bool, models: list[str]):
    from harness_bank import HarnessBank
    from harness_bank.store import StoreUnavailable, describe, is_url

    os.umask(PRIVATE_UMASK)  # the process's: the index and the evolve state are written later, elsewhere
    if is_url(str(path)):
        where = cache_dir or data_dir()
        index = where / f"bank-{hashlib.sha256(describe(str(path)).encode()).hexdigest()[:12]}.faiss"
        try:
            where.mkdir(parents=True, exist_ok=True)
            _make_dir_private(where)
            return HarnessBank(str(path), index_path=index)
        except StoreUnavailable as exc:  # names the database already
            if exc.kind == "login":
                raise ServiceError(f"{exc}; put the password in PGPASSWORD or ~/.pgpass",
                                   REFUSED_LOGIN) from None
            if exc.kind == "unreachable":
                raise ServiceError(f"cannot reach {exc}; is it running? (`jitagent fleet dev` starts a "
                                   f"throwaway one)", UNREACHABLE) from None
            raise DataDirError(str(exc)) from None
        except (OSError, RuntimeError) as exc:  # RuntimeError: faiss, on a corrupt index file
            raise DataDirError(f"bank {describe(str(path))}: {one_line(exc)}") from None
    if "://" in str(path):
        raise DataDirError(f"bank {describe(str(path))}: not a file path nor a postgresql:// URL")
    path = Path(path)
    where = path.parent
    refuse_scripted(path, models)  # before the file is made
    if not create and not path.exists():  # a typo must not leave an empty bank behind
        raise DataDirError(f"no bank at {path}: create one with `jitagent bank init --bank {path}`, or name "
                           "the one you mean with --data-dir or --bank")
    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataDirError(f"data dir {where}: {exc.strerror or exc}") from None
    if not os.access(where, os.W_OK | os.X_OK):
        raise DataDirError(f"data dir {where}: not writable")
    if path.exists() and not path.is_file():
        raise DataDirError(f"data dir {where}: {path.name} is not a file")
    if path.is_file() and path.stat().st_size and not _is_sqlite(path):
        raise DataDirError(f"data dir {where}: {path.name} is not an SQLite database")
    if where.resolve() == (cache_dir or data_dir()).resolve():  # the data dir, not a --bank file's folder
        _make_dir_private(where)
    _make_private(where, path.name)
    try:
        return HarnessBank(path)
    except (OSError, RuntimeError, sqlite3.Error) as exc:  # RuntimeError: faiss, on a corrupt index file
        raise DataDirError(f"data dir {where}: cannot open the harness bank {path.name}: {one_line(exc)}") \
            from None


def shared(path: Path) -> Path:
    """A file the user asked for outside the data dir (a report, a figure, an export, a ledger) takes the
    mode the user's umask gives, not the bank's 0600: the process's umask is private once a bank is open."""
    if path.is_file() and path.stat().st_uid == os.geteuid():
        path.chmod(0o666 & ~USER_UMASK)
    return path


def _make_private(where: Path, name: str) -> None:
    """A bank made before files were 0600 (its WAL, SHM, index and evolve state too): this user's only.
    SQLite gives a new WAL and SHM file the database's mode."""
    for file in where.glob(glob.escape(name) + "*"):
        if file.is_file() and file.stat().st_uid == os.geteuid():
            file.chmod(0o600)


def _make_dir_private(where: Path) -> None:
    """A data dir made before it was 0700 (or by hand): this user's only, unless another user owns it."""
    info = where.stat()
    if info.st_uid == os.geteuid() and info.st_mode & 0o077:
        where.chmod(stat.S_IMODE(info.st_mode) & 0o700)


def _is_sqlite(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(16) == b"SQLite format 3\x00"


def is_throwaway(location: str | Path, store=None) -> bool:
    """A bank nobody keeps: a file under the system's temp dir, or a database on a PostgreSQL server that
    jitagent started to throw away (tests, `jitagent fleet dev`: its cluster_name says so; `store`, the
    open database, asks it)."""
    from harness_bank.store import is_url

    if not is_url(str(location)):
        return Path(location).resolve().is_relative_to(Path(tempfile.gettempdir()).resolve())
    return store is not None and store.server_cluster_name() == THROWAWAY_CLUSTER


def refuse_scripted(location: str | Path, model_names: list[str], store=None) -> None:
    """The scripted model's canned replies are no evidence: a bank that is kept must never learn from them.
    DataDirError (usage) when a scripted model would write to a bank that is not throwaway. Called for a
    file before it is opened (nothing is created), for a shared database once open (`store`)."""
    from harness_bank.store import describe

    scripted = [name for name in model_names if name.startswith("scripted")]
    if scripted and not is_throwaway(location, store):
        raise DataDirError(f"the {scripted[0]} model gives canned replies for tests and would record them as "
                           f"evidence in {describe(str(location))}; use it only on a throwaway bank "
                           f"(--data-dir under {tempfile.gettempdir()}, or `jitagent fleet dev`'s "
                           f"PostgreSQL)")
