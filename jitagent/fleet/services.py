"""Throwaway PostgreSQL and Redis servers for tests and benchmarks: started from the Debian packages'
binaries as a user would start them, on free loopback ports, under a temp dir that goes with them.

PostgreSQL refuses to run as root, so under root it runs as the `postgres` user the package creates.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from jitagent.paths import THROWAWAY_CLUSTER

POSTGRES_PACKAGE = "postgresql-15"
REDIS_PACKAGE = "redis-server"
FAST_UNSAFE = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}  # a crash loses it all


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def postgres_binary(name: str) -> str | None:
    """Debian keeps the server's programs off PATH, under /usr/lib/postgresql/VERSION/bin."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    return candidates[-1] if candidates else None


def postgres_missing() -> str | None:
    """Why a local PostgreSQL cannot be started here, or None."""
    if not (postgres_binary("initdb") and postgres_binary("pg_ctl")):
        return f"PostgreSQL server binaries (initdb, pg_ctl) not found: apt-get install {POSTGRES_PACKAGE}"
    if os.geteuid() == 0 and not _user_exists("postgres"):
        return f"running as root and no 'postgres' user to run PostgreSQL as: " \
               f"apt-get install {POSTGRES_PACKAGE}"
    return None


def redis_missing() -> str | None:
    if shutil.which("redis-server"):
        return None
    return f"redis-server not found: apt-get install {REDIS_PACKAGE}"


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


@contextmanager
def local_postgres(settings: dict[str, str] | None = None) -> Iterator[str]:
    """A fresh cluster; yields the URL of its `postgres` database (role `jitagent`, trust auth on
    127.0.0.1 only). `settings`: server settings, e.g. FAST_UNSAFE for tests. Its cluster_name marks it
    throwaway (jitagent.paths.is_throwaway): the scripted model may write there."""
    if problem := postgres_missing():
        raise RuntimeError(problem)
    root = Path(tempfile.mkdtemp(prefix="jitagent-pg-"))
    as_user = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    data, port = root / "data", free_port()
    options = {"listen_addresses": "127.0.0.1", "port": str(port), "unix_socket_directories": str(root),
               "cluster_name": THROWAWAY_CLUSTER, **(settings or {})}
    try:
        _run([*as_user, postgres_binary("initdb"), "-D", str(data), "-U", "jitagent", "--auth=trust",
              "-E", "UTF8", "--no-sync", "--no-instructions"])
        _run([*as_user, postgres_binary("pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w", "-t", "60",
              "-o", " ".join(f"-c {k}={v}" for k, v in options.items()), "start"])
        try:
            yield f"postgresql://jitagent@127.0.0.1:{port}/postgres"
        finally:
            _run([*as_user, postgres_binary("pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"])
    finally:
        shutil.rmtree(root, ignore_errors=True)


def create_database(url: str, name: str) -> str:
    """A new, empty database on the server of `url`; its URL."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return url.rsplit("/", 1)[0] + "/" + name


@contextmanager
def local_redis(password: str | None = None) -> Iterator[str]:
    """A fresh redis-server that keeps nothing on disk; yields its URL (without the password, which a
    client must then bring: tests of a refused login)."""
    if problem := redis_missing():
        raise RuntimeError(problem)
    root = Path(tempfile.mkdtemp(prefix="jitagent-redis-"))
    port = free_port()
    config = root / "redis.conf"  # a password in a file, not in the server's argv
    config.write_text(f"requirepass {password}\n" if password else "")
    config.chmod(0o600)
    server = subprocess.Popen(["redis-server", str(config), "--port", str(port), "--bind", "127.0.0.1",
                               "--dir", str(root), "--save", "", "--appendonly", "no", "--logfile",
                               str(root / "log")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith((b"+PONG", b"-NOAUTH")):  # it answers: up
                        break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    log = (root / "log").read_text()[-500:]
                    raise RuntimeError(f"redis-server did not start: {log}") from None
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(30)
        shutil.rmtree(root, ignore_errors=True)


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"{Path(argv[argv.index('--') + 1] if '--' in argv else argv[0]).name} failed: "
                           f"{(done.stderr or done.stdout).strip()[-500:]}")
