"""`jitagent serve` and `jitagent client` as a user runs them: subprocesses against a real server on
127.0.0.1. Every failure is one line on stderr and an exit status (2: the command line, 1: the work)."""

import json
import re
import subprocess
import sys
import time

import pytest

from harness_bank.router import ROUTES
from jitagent.cli.common import secret_from
from jitagent.cli.options import Failure
from jitagent.cli.serve import TOKEN_ENV

from .conftest import free_port


def jitagent(*args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "jitagent", *args], capture_output=True, text=True, timeout=timeout
    )


def one_line(done) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`jitagent serve` with the instant scripted model, as its own process."""
    port, data = free_port(), tmp_path_factory.mktemp("data")
    log = (data / "serve.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jitagent",
            "serve",
            "--port",
            str(port),
            "--data-dir",
            str(data),
            "--meta-model",
            "scripted",
            "--no-dry-run",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    address = f"127.0.0.1:{port}"
    for _ in range(600):
        if jitagent("client", "health", "--address", address, timeout=30).stdout.strip() == "SERVING":
            break
        assert proc.poll() is None, (data / "serve.log").read_text()
        time.sleep(0.5)
    yield address, port
    proc.terminate()
    proc.wait(30)
    log.close()


def test_the_token_comes_from_a_file_or_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    assert secret_from(None, None, "--auth-token", TOKEN_ENV) is None
    monkeypatch.setenv(TOKEN_ENV, "from-env")
    assert secret_from(None, None, "--auth-token", TOKEN_ENV) == "from-env"
    (tmp_path / "token").write_text("from-file\n")
    assert secret_from(None, tmp_path / "token", "--auth-token", TOKEN_ENV) == "from-file"


@pytest.mark.parametrize(
    "flag, file, fragment",
    [
        ("s3cret", None, "puts the secret in argv"),
        (None, "missing", "No such file"),
        (None, "empty", "empty"),
    ],
)
def test_a_secret_in_argv_or_a_bad_secret_file_refuses_with_one_line(tmp_path, flag, file, fragment):
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(Failure) as refused:
        secret_from(flag, tmp_path / file if file else None, "--auth-token", TOKEN_ENV)
    assert fragment in str(refused.value) and "\n" not in str(refused.value) and refused.value.status == 2


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "--auth-token", "s3cret"],
        ["client", "--token", "s3cret", "health"],
        ["client", "health", "--token", "s3cret"],
        ["serve", "--api-key", "k"],
    ],
)
def test_secrets_in_argv_refuse_to_start(argv):
    done = jitagent(*argv)
    assert done.returncode == 2 and "puts the secret in argv" in one_line(done)


def test_a_client_without_a_server_says_so_in_one_line():
    done = jitagent("client", "solve", "What is 2 + 2?", "--address", f"127.0.0.1:{free_port()}")
    assert done.returncode == 1 and "cannot reach a server at 127.0.0.1:" in one_line(done)
    assert "jitagent serve" in done.stderr


@pytest.mark.parametrize("address", ["127.0.0.1:99999", "127.0.0.1:-5", "127.0.0.1", ":50051", "h:0"])
def test_an_address_grpc_would_wrap_or_default_is_a_usage_error(address):
    done = jitagent("client", "health", "--address", address)
    assert done.returncode == 2 and one_line(done).startswith(
        f"jitagent client health: --address: expected HOST:PORT with a port from 1 to 65535, got '{address}'")


def test_shared_options_go_before_or_after_the_subcommand(server):
    address, _ = server
    after = jitagent("client", "solve", "Name a colour.", "--address", address, "--json")
    before = jitagent("client", "--address", address, "--json", "solve", "Name a colour.")
    for done in (after, before):
        assert done.returncode == 0, done.stderr
        events = [json.loads(line) for line in done.stdout.splitlines()]
        assert "route" in events[-1] and len({e["run_id"] for e in events}) == 1


def test_an_unverified_solve_shows_no_reward_and_a_report_attaches_to_its_run(server):
    address, _ = server
    shown = jitagent("client", "solve", "Write a haiku about the sea.", "--address", address)
    assert shown.returncode == 0 and "reward=unverified" in shown.stdout, shown.stderr
    # stdout is the result alone; the events, as it went, are on stderr
    assert shown.stdout.strip().splitlines()[0].startswith("result: ") and len(shown.stdout.splitlines()) == 1
    assert "chosen: " in shown.stderr and "result: " not in shown.stderr
    done = jitagent("client", "solve", "Write a haiku about the sea.", "--address", address, "--json")
    result = json.loads(done.stdout.splitlines()[-1])  # the flat record, as `solve --json` prints it
    assert result["reward"] is None and result["passed"] is None and result["route"] in ROUTES
    reported = jitagent(
        "client",
        "report",
        result["run_id"],
        "--reward",
        "1",
        "--detail",
        "a fine haiku",
        "--address",
        address,
    )
    assert (
        reported.returncode == 0 and "recorded" in reported.stdout and "incumbent none yet" in reported.stdout
    )
    again = jitagent("client", "report", result["run_id"], "--reward", "0", "--address", address)
    assert again.returncode == 2 and one_line(again).startswith("jitagent client report: ALREADY_EXISTS")
    unknown = jitagent("client", "report", "no-such-run", "--reward", "1", "--address", address)
    assert unknown.returncode == 2 and "no run 'no-such-run'" in one_line(unknown)


def test_expect_and_verifier_attach_a_verifier(server):
    address, _ = server
    expected = jitagent("client", "solve", "What is 2 + 2?", "--expect", "4", "--address", address, "--json")
    run = json.loads(expected.stdout.splitlines()[-1])
    assert (
        run["passed"] is False and run["reward"] == 0 and "expected 4" in run["verdict"]
    )  # the model says 0
    regex = jitagent(
        "client",
        "solve",
        "Say zero.",
        "--verifier",
        '{"kind": "regex", "pattern": "0"}',
        "--address",
        address,
        "--json",
    )
    assert json.loads(regex.stdout.splitlines()[-1])["reward"] == 1
    bad = jitagent("client", "solve", "x", "--verifier", '{"kind": "regex"', "--address", address)
    assert bad.returncode == 2 and one_line(bad).startswith(
        "jitagent client solve: --verifier: not a JSON object"
    )


def test_a_client_deadline_is_one_line(server):
    address, _ = server
    done = jitagent("client", "solve", "What is 2 + 2?", "--address", address, "--timeout", "0.001")
    assert done.returncode == 1 and "within --timeout 0.001 s" in one_line(done)


def test_a_second_server_on_a_used_port_fails_fast(server, tmp_path):
    _, port = server
    start = time.monotonic()
    done = jitagent("serve", "--port", str(port), "--data-dir", str(tmp_path), "--meta-model", "scripted")
    assert done.returncode == 1 and time.monotonic() - start < 60
    assert one_line(done) == (
        f"jitagent serve: cannot listen on 127.0.0.1:{port}: the port is in use (another "
        f"server?) or the host is not this machine's; choose another with --port or --host"
    )


def test_the_server_and_the_client_spell_their_one_token_file_alike(tmp_path):
    from jitagent.cli.main import build_parser

    parser = build_parser()
    for spelling in ("--auth-token-file", "--token-file"):  # the old spelling still works, unlisted
        args = parser.parse_args(["client", spelling, str(tmp_path / "t"), "health"])
        assert args.token_file == tmp_path / "t"
    helps = [jitagent(*command, "--help").stdout for command in (["serve"], ["client"])]
    assert all("--auth-token-file" in text for text in helps) and "--token-file" not in helps[1]


def test_local_and_client_solve_print_one_result_line_and_one_json_shape(server, tmp_path):
    address, _ = server
    task = ("What is 2 + 2?", "--expect", "4")
    local_args = ("--meta-model", "scripted", "--no-dry-run", "--n", "1", "--data-dir", str(tmp_path))
    lines = [jitagent("client", "solve", *task, "--address", address).stdout,
             jitagent("solve", *task, *local_args).stdout]
    shape = r"result: run_id=[0-9a-f]{32} route=[a-z]+ harness=\S+ answer='0' reward=0 verdict='.*'\n"
    assert all(re.fullmatch(shape, line) for line in lines), lines  # stdout is the one line, both ways
    client = jitagent("client", "solve", *task, "--address", address, "--json").stdout.splitlines()[-1]
    local = json.loads(jitagent("solve", *task, *local_args, "--json").stdout)
    assert json.loads(client).keys() <= local.keys()  # the flat record; local adds what a synthesis did
