"""Every `serve` setting reaches what it sets: a case per setting (a new setting without one fails here),
and a call that leaves n unset gets serve's --n from a real server (it was a hard-coded 3)."""

import asyncio

import pytest

from jitagent.cli import settings
from jitagent.cli.main import build_parser
from jitagent.cli.serve import server_config
from jitagent.solving.layer import Solving
from jitagent.tasks.task import task_for

from .conftest import running

CASES = {  # flag: (its value on the command line, where it must land)
    "--host": ("0.0.0.0", lambda c: c.host == "0.0.0.0"),
    "--port": ("50999", lambda c: c.port == 50999),
    "--data-dir": ("{tmp}/data", lambda c: str(c.data_dir).endswith("/data")),
    "--bank": ("{tmp}/other.db", lambda c: str(c.bank).endswith("/other.db")),
    "--meta-model": ("smollm2-135m", lambda c: c.meta_model == "smollm2-135m"),
    "--solver-model": ("qwen2.5-coder-0.5b", lambda c: c.solver_model == "qwen2.5-coder-0.5b"),
    "--api-key-file": ("{tmp}/key", lambda c: c.api_key == "the-key"),
    "--concurrency": ("4", lambda c: c.concurrency == 4),
    "--max-queue": ("7", lambda c: c.max_queue == 7),
    "--max-concurrent": ("9", lambda c: c.max_concurrent == 9),
    "--n": ("2", lambda c: c.pipeline.synthesis.n == 2),
    "--no-dry-run": (None, lambda c: c.pipeline.synthesis.dry_run is False),
    "--allow-unconfined": (None, lambda c: c.allow_unconfined is True),
    "--auth-token-file": ("{tmp}/token", lambda c: c.auth_token == "the-token"),
    "--tokens-file": ("{tmp}/tokens.json", lambda c: str(c.tokens_file).endswith("/tokens.json")),
    "--tls-cert": ("{tmp}/cert.pem", lambda c: str(c.tls_cert).endswith("cert.pem")),
    "--tls-key": ("{tmp}/key.pem", lambda c: str(c.tls_key).endswith("key.pem")),
    "--metrics-port": ("9109", lambda c: c.metrics_port == 9109),
    "--grace": ("3.5", lambda c: c.grace_s == 3.5),
    "--openai-port": ("8081", lambda c: c.openai_port == 8081),
    "--log-format": ("text", lambda c: c.log_format == "text"),
    "--retrain-every": ("50", lambda c: c.pipeline.retrain.every == 50),
    "--practice": ("2", lambda c: c.pipeline.practice.tries == 2),
}


def test_every_serve_setting_has_a_case():
    assert set(CASES) == {s.flag for s in settings.SERVE}


@pytest.mark.parametrize("flag", sorted(CASES))
def test_each_serve_setting_lands_in_the_server_config(flag, tmp_path, monkeypatch):
    for name in ("JITAGENT_AUTH_TOKEN", "JITAGENT_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "key").write_text("the-key\n")
    (tmp_path / "token").write_text("the-token\n")
    value, lands = CASES[flag]
    argv = ["serve", flag] + ([] if value is None else [value.format(tmp=tmp_path)])
    args = build_parser().parse_args(argv)
    settings.resolve(args, {})
    config = server_config(args)
    assert lands(config)
    default = server_config(settings_resolved(["serve"]))
    assert not lands(default)  # the case tests the setting, not a default that happens to match


def settings_resolved(argv):
    args = build_parser().parse_args(argv)
    settings.resolve(args, {})
    return args


def test_a_call_that_leaves_n_unset_gets_serves_n_and_no_dry_run_is_not_mentioned(make_config):
    assert Solving.candidates(0) is None and Solving.candidates(5) == 5

    async def main():
        async with running(make_config(n=2, dry_run=False)) as (_, client):
            reply = await client.synthesize([task_for("Reverse the string 'stressed'.")], n=0)
            (result,) = reply.results
            assert len(result.candidates) == 2  # serve --n, not 3
            assert "dry" not in result.reason and result.reason  # --no-dry-run: no dry run to speak of
            again = await client.synthesize([task_for("Count the vowels in 'banana'.", type="vowels")], n=1)
            assert len(again.results[0].candidates) == 1  # a call's own n still wins
    asyncio.run(main())
