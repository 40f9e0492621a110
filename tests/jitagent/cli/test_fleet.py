"""`jitagent queue put|results|stats` and the fleet flags, run as a user would, on a real redis-server."""

import asyncio
import json
import subprocess
import sys

import pytest

from jitagent.fleet.queue import TaskQueue


def jitagent(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jitagent", *args], input=stdin, capture_output=True,
                          text=True, timeout=120)


def line(i: int) -> str:
    return json.dumps({"id": f"c{i}", "prompt": f"What is {i} minus {i}?", "verifier": {"kind": "numeric",
                                                                                       "expected": 0}})


@pytest.fixture
def stream(request) -> str:
    return f"cli-{request.node.name}"


def test_put_checks_every_task_first_then_results_and_stats_read_the_streams(redis_server, stream, tmp_path):
    queue_args = ("queue", "--redis", redis_server, "--stream", stream)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(line(1) + "\n" + '{"id": "c2"}\n')
    refused = jitagent(*queue_args, "put", str(bad))
    assert refused.returncode == 2 and refused.stdout == ""
    (message,) = refused.stderr.strip().splitlines()
    assert message.endswith(f"{bad}:2: prompt: Field required")
    put = jitagent(*queue_args, "put", "-", stdin=line(1) + "\n" + line(2) + "\n")
    assert put.returncode == 0
    assert [json.loads(x)["task_id"] for x in put.stdout.splitlines()] == ["c1", "c2"]

    async def finish_one():  # what a worker does with an entry
        queue = TaskQueue.connect(redis_server, stream)
        await queue.ensure_group()
        entry = await queue.take("w", claim_idle_s=60, block_s=1)
        assert await queue.finish("w", entry, {"entry": entry.id, "task_id": "c1", "worker": "w",
                                               "result": json.dumps({"route": "exploit"})})
        await queue.close()
    asyncio.run(finish_one())
    results = jitagent(*queue_args, "results")
    (shown,) = [json.loads(x) for x in results.stdout.splitlines()]
    assert shown["task_id"] == "c1" and shown["result"] == {"route": "exploit"} and shown["worker"] == "w"
    assert jitagent(*queue_args, "results", "--after", shown["id"]).stdout == ""
    assert jitagent(*queue_args, "results", "--dead").stdout == ""
    stats = json.loads(jitagent(*queue_args, "stats").stdout)
    assert stats | {"consumers": None} == {"stream": stream, "group": "jitagent", "tasks": 2, "results": 1,
                                          "dead": 0, "pending": 0, "lag": 1, "consumers": None}
    assert [c["name"] for c in stats["consumers"]] == ["w"]


def test_unreachable_services_and_passwords_in_argv_are_one_line(tmp_path):
    down = jitagent("queue", "--redis", "redis://127.0.0.1:1/0", "stats")
    assert down.returncode == 1 and len(down.stderr.strip().splitlines()) == 1
    assert down.stderr.startswith("jitagent queue: cannot reach Redis at redis://127.0.0.1:1/0 (")
    for argv, hint in ((("queue", "--redis", "redis://:hunter2@127.0.0.1:1/0", "stats"), "JITAGENT_REDIS"),
                       (("worker", "--bank", "postgresql://me:hunter2@127.0.0.1:1/bank"), "PGPASSWORD"),
                       (("serve", "--bank", "postgresql://me:hunter2@127.0.0.1:1/bank"), "PGPASSWORD")):
        refused = jitagent(*argv)
        assert refused.returncode == 2 and hint in refused.stderr and "Traceback" not in refused.stderr
    for command in ("worker", "serve"):
        no_bank = jitagent(command, "--bank", "postgresql://me@127.0.0.1:1/bank", "--meta-model", "scripted",
                           "--data-dir", str(tmp_path), *(("--port", "0") if command == "serve" else ()))
        assert no_bank.returncode == 1
        assert no_bank.stderr.strip().splitlines() == [no_bank.stderr.strip()]
        url = "postgresql://me@127.0.0.1:1/bank"
        assert f"jitagent {command}: cannot reach PostgreSQL at {url}: " in no_bank.stderr


def test_fleet_options_follow_the_one_cli_grammar():
    """Queue options after the subcommand as before it; the worker shares the model and bank options."""
    after = jitagent("queue", "stats", "--redis", "redis://127.0.0.1:1/0", "--stream", "s")
    assert after.returncode == 1
    assert after.stderr.startswith("jitagent queue: cannot reach Redis at redis://127.0.0.1:1/0")
    key = jitagent("worker", "--api-key", "sk-secret", "--meta-model", "scripted")
    assert key.returncode == 2 and "--api-key-file" in key.stderr and "sk-secret" not in key.stderr
    usage = jitagent("worker", "--help").stdout
    flags = ("--solver-model", "--api-key-file", "--data-dir", "--debug", "--group")
    assert all(flag in usage for flag in flags)


def test_the_worker_logs_like_serve_from_its_first_line(redis_server, stream, tmp_path):
    """JSON lines (time, level, logger, the event's fields) by default, readable text with --log-format."""
    for log_format in ("json", "text"):
        argv = [sys.executable, "-m", "jitagent", "worker", "--redis", redis_server, "--stream", stream,
                "--meta-model", "scripted", "--data-dir", str(tmp_path), "--log-format", log_format]
        worker = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        try:
            first = worker.stdout.readline()
        finally:
            worker.terminate()
            worker.wait(60)
        if log_format == "json":
            entry = json.loads(first)
            assert (entry["level"], entry["logger"], entry["event"]) == ("info", "jitagent.worker", "worker")
        else:
            assert " INFO    jitagent.worker " in first and 'event="worker"' in first


def test_put_refuses_a_prompt_over_the_cap_before_reaching_redis():
    huge = json.dumps({"id": "huge", "prompt": "x" * 100_001})
    done = jitagent("queue", "--redis", "redis://127.0.0.1:1/0", "put", "-", stdin=line(1) + "\n" + huge)
    assert done.returncode == 2 and done.stdout == ""  # refused before the unreachable Redis was tried
    assert "<stdin>:2: prompt:" in done.stderr and "a task's text is at most 100,000" in done.stderr


def test_a_redis_url_password_from_the_environment_never_shows_in_an_error():
    import os
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"redis://:hunter2@127.0.0.1:{port}"
    done = subprocess.run([sys.executable, "-m", "jitagent", "queue", "stats"], capture_output=True,
                          text=True, timeout=120, env=os.environ | {"JITAGENT_REDIS_URL": url})
    assert done.returncode == 1 and "cannot reach Redis at redis://:***@127.0.0.1:" in done.stderr
    assert "hunter2" not in done.stderr + done.stdout
