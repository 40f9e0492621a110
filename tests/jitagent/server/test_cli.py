"""Secrets never in argv: the token comes from a file or the environment; the old flags refuse."""

import subprocess
import sys

import pytest

from jitagent.server.cli import TOKEN_ENV, token_from


def test_the_token_comes_from_a_file_or_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    assert token_from(None, None, "--auth-token") is None
    monkeypatch.setenv(TOKEN_ENV, "from-env")
    assert token_from(None, None, "--auth-token") == "from-env"
    (tmp_path / "token").write_text("from-file\n")
    assert token_from(None, tmp_path / "token", "--auth-token") == "from-file"


@pytest.mark.parametrize("flag, file, fragment", [
    ("s3cret", None, "puts the secret in argv"), (None, "missing", "No such file"), (None, "empty", "empty"),
])
def test_a_token_in_argv_or_a_bad_token_file_refuses_with_one_line(tmp_path, flag, file, fragment):
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(SystemExit) as exit_:
        token_from(flag, tmp_path / file if file else None, "--auth-token")
    assert fragment in str(exit_.value) and "\n" not in str(exit_.value)


@pytest.mark.parametrize("argv", [["serve", "--auth-token", "s3cret"], ["client", "--token", "s3cret", "health"]])
def test_the_old_flags_refuse_to_start(argv):
    done = subprocess.run([sys.executable, "-m", "jitagent", *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "puts the secret in argv" in done.stderr and "Traceback" not in done.stderr
