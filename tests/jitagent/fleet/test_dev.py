"""A fleet for a newcomer: `jitagent fleet dev` starts throwaway PostgreSQL and Redis and prints what to
export; a service that cannot be used is one message and one exit status per kind of failure, the same
for PostgreSQL and Redis (unreachable: 1; a login refused: 2)."""

import signal
import subprocess
import sys

import psycopg
import pytest
import redis

from jitagent.config.paths import THROWAWAY_CLUSTER
from jitagent.fleet.services import local_redis, postgres_missing, redis_missing


def jitagent(*args):
    return subprocess.run([sys.executable, "-m", "jitagent", *args], capture_output=True, text=True,
                          timeout=300)


def one_line(done) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


def test_fleet_dev_prints_the_urls_to_export_and_takes_its_services_away_on_ctrl_c():
    if problem := postgres_missing() or redis_missing():
        pytest.skip(problem)
    dev = subprocess.Popen([sys.executable, "-m", "jitagent", "fleet", "dev"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        exports = dict(dev.stdout.readline().removeprefix("export ").strip().split("=", 1) for _ in range(2))
        bank, queue = exports["JITAGENT_BANK"], exports["JITAGENT_REDIS_URL"]
        with psycopg.connect(bank) as conn:
            assert conn.execute("SHOW cluster_name").fetchone()[0] == THROWAWAY_CLUSTER
        assert redis.Redis.from_url(queue).ping()
        stats = jitagent("queue", "stats", "--redis", queue)
        assert stats.returncode == 0, stats.stderr
    finally:
        dev.send_signal(signal.SIGINT)
        assert dev.wait(120) == 0
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(bank, connect_timeout=2)


def test_a_service_that_does_not_answer_is_status_1_for_postgresql_and_redis_alike(tmp_path):
    pg = jitagent("bank", "stats", "--bank", "postgresql://me@127.0.0.1:1/bank")
    assert pg.returncode == 1
    assert one_line(pg).startswith("jitagent bank stats: cannot reach PostgreSQL at postgresql://me@127.0.0.1:1/")
    queue = jitagent("queue", "stats", "--redis", "redis://127.0.0.1:1/0")
    assert queue.returncode == 1
    assert one_line(queue).startswith("jitagent queue: cannot reach Redis at redis://127.0.0.1:1/0")
    assert "jitagent fleet dev" in pg.stderr and "jitagent fleet dev" in queue.stderr


def test_a_redis_that_wants_a_password_says_where_to_give_it_status_2():
    if problem := redis_missing():
        pytest.skip(problem)
    with local_redis(password="s3cret") as url:
        done = jitagent("queue", "stats", "--redis", url)
    assert done.returncode == 2
    assert one_line(done).startswith(f"jitagent queue: Redis at {url} refused the login (")
    assert "JITAGENT_REDIS_URL, as redis://:PASSWORD@HOST:PORT/DB" in done.stderr
    assert "s3cret" not in done.stderr
