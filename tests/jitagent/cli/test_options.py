"""Every option of every command, as a user meets it: it has help, a number outside its range is refused
with the option's name and the range, tables piped to a file never wrap, completion covers them all."""

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from jitagent.cli.completion import INSTALL
from jitagent.cli.main import build_parser
from jitagent.cli.options import HIDDEN, RangeHelp
from jitagent.harness.seeds import load_seeds
from jitagent.v1 import jitagent_pb2 as pb

ROOT = Path(__file__).resolve().parents[3]


def jitagent(*args, stdin=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "jitagent", *args], capture_output=True, text=True,
                          timeout=timeout, input=stdin)


def parsers(parser=None, path=("jitagent",)):
    """(command path, parser) of every command and group, depth first."""
    parser = parser or build_parser()
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers(sub, (*path, name))


def test_every_option_of_every_command_has_help():
    missing = [f"{' '.join(path)} {action.option_strings[0] if action.option_strings else action.dest}"
               for path, parser in parsers() for action in parser._actions
               if not isinstance(action, argparse._SubParsersAction) and action.help is None]
    assert missing == []


def test_every_numeric_option_says_its_range_in_its_help():
    for path, parser in parsers():
        for action in parser._actions:
            if getattr(action.type, "rule", None) and action.help != HIDDEN:
                help_text = RangeHelp("x")._get_help_string(action)
                assert action.type.rule in help_text, (path, action.option_strings)


def test_every_help_says_its_range_and_default_one_way():
    """`(range; default: X)`, once, at the end: never `(default: 1) (between 0 and 1)` nor `(default: )`."""
    for path, parser in parsers():
        for action in parser._actions:
            text = RangeHelp("x")._get_help_string(action)
            split = re.search(r"\(default: [^()]*\).*\(", text)  # the default apart from the range
            assert not split and "default: )" not in text, (path, action.option_strings, text)
            assert text.count("default:") <= 1, (path, action.option_strings, text)


@pytest.mark.parametrize("argv, message", [
    (["solve", "x", "--n", "99"], "jitagent solve: --n: must be between 1 and 8, got 99"),
    (["serve", "--port", "-1"], "jitagent serve: --port: must be between 0 and 65535, got -1"),
    (["run", "--harness", "direct", "--suite", "starter", "--limit", "-1"],
     "jitagent run: --limit: must be at least 1, got -1"),
    (["bank", "search", "x", "-k", "-3"], "jitagent bank search: -k: must be at least 1, got -3"),
    (["bank", "warm", "--suite", "starter", "--budget-s", "-5"],
     "jitagent bank warm: --budget-s: must be more than 0, got -5"),
    (["bank", "warm", "--suite", "starter", "--budget-s", "0"],
     "jitagent bank warm: --budget-s: must be more than 0, got 0"),
    (["evolve", "--suite", "starter", "--budget-s", "0"], "jitagent evolve: --budget-s: must be more than 0"),
    (["bench", "--suite", "starter", "--repeats", "0"],
     "jitagent bench: --repeats: must be at least 1, got 0"),
    (["client", "report", "r", "--reward", "2"], "jitagent client report: --reward: must be between 0 and 1"),
    (["client", "solve", "x", "--timeout", "-1"], "jitagent client solve: --timeout: must be more than 0"),
    (["worker", "--slots", "0"], "jitagent worker: --slots: must be between 1 and 64, got 0"),
    (["queue", "put", "starter", "--limit", "0"], "jitagent queue put: --limit: must be at least 1, got 0"),
    (["solve", "x", "-k", "x"], "jitagent solve: -k: expected an integer, got 'x'"),
])
def test_a_number_out_of_range_names_the_option_and_the_range(argv, message):
    done = jitagent(*argv)
    assert done.returncode == 2 and done.stderr.startswith(message), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "validation error" not in done.stderr


def test_a_setting_out_of_range_from_the_environment_names_the_variable():
    done = subprocess.run([sys.executable, "-m", "jitagent", "serve"], capture_output=True, text=True,
                          timeout=300, env=os.environ | {"JITAGENT_N": "99"})
    assert done.returncode == 2
    assert done.stderr.strip() == "jitagent serve: JITAGENT_N: must be between 1 and 8, got 99"


def test_tables_piped_never_wrap(tmp_path):
    """Piped, each row is one line whatever its length: nothing is cut mid-word for a terminal's width."""
    done = jitagent("seeds")
    rows = [line for line in done.stdout.splitlines() if line.startswith("│")]
    assert done.returncode == 0 and len(rows) == len(load_seeds())  # one line per seed
    assert any(len(row) > 120 for row in rows)  # wider than any terminal default: nothing folded


def test_token_counts_are_unsigned_on_the_wire():
    for message, fields in ((pb.Cost, ("prompt_tokens", "completion_tokens")),
                            (pb.ReportOutcomeRequest, ("prompt_tokens", "completion_tokens"))):
        for name in fields:
            field = message.DESCRIPTOR.fields_by_name[name]
            assert field.type == field.TYPE_UINT32
    with pytest.raises(ValueError):
        pb.Cost(prompt_tokens=-1)


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_completion_knows_every_command_and_option(shell):
    done = jitagent("completion", shell)
    assert done.returncode == 0
    for word in ("solve", "clusters", "--openai-port", "--budget-s", "--redo", "--harness"):
        assert word in done.stdout, word
    installs = [line for line in done.stdout.splitlines()
                if line.startswith("# ") and ("~/" in line or "{fpath" in line)]
    assert installs == [f"# Install: {INSTALL[shell]}"]  # shtab's own usage named another path


def test_docs_install_the_completion_where_the_script_says():
    assert INSTALL["bash"] in (ROOT / "docs" / "cli.md").read_text()


def test_a_reader_that_goes_away_early_is_no_error():
    done = subprocess.run(f"{sys.executable} -m jitagent completion bash | head -1", shell=True,
                          capture_output=True, text=True, timeout=120)
    assert done.stderr == "" and done.stdout.startswith("#")  # was: "[Errno 32] Broken pipe"


def help_of(action) -> str:
    return RangeHelp("x")._get_help_string(action)


def test_every_model_option_lists_the_models_load_model_takes():
    """One list: what --meta-model's help offers is what an unknown model's error names."""
    from jitagent.models import MODEL_CHOICES, MODEL_NAMES, load_model

    with pytest.raises(ValueError) as refused:
        load_model("gpt-4")
    assert MODEL_CHOICES in str(refused.value) and "qwen2.5-coder-1.5b" in MODEL_CHOICES
    for path, parser in parsers():
        options = {a.option_strings[0]: a for a in parser._actions if a.option_strings}
        for flag in ("--meta-model", "--solver-model"):
            if flag in options and "same choices" not in options[flag].help:
                assert all(name in options[flag].help for name in MODEL_NAMES), (path, flag)
        if "--solver-model" in options and "same choices" in options["--solver-model"].help:
            assert "--meta-model" in options, path  # "same choices" as an option the command has


def test_every_option_with_a_default_says_it_and_integers_show_as_integers():
    for path, parser in parsers():
        for action in parser._actions:
            default, text = action.default, help_of(action)
            if isinstance(default, (int, float, str)) and not isinstance(default, bool) and text != HIDDEN \
                    and default not in (HIDDEN, ""):
                assert "default" in text, (path, action.option_strings)
            assert "e+" not in text, (path, action.option_strings)
    report = jitagent("client", "report", "--help")
    assert "between 0 and 4294967295" in " ".join(report.stdout.split())
    solve = " ".join(jitagent("solve", "--help").stdout.split())
    assert "--n N candidates per synthesis; env JITAGENT_N (between 1 and 8; default: 3)" in solve
    assert "(between 1 and 13; default: 3)" in solve


def test_an_invalid_task_is_told_in_our_words_not_pydantic_s():
    done = jitagent("solve", "-", stdin="x" * 100_001)
    assert done.returncode == 2
    assert done.stderr == ("jitagent solve: task: prompt: 100,001 characters; a task's text is at most "
                           "100,000\n")


def test_shared_options_go_before_the_command_too_and_an_unknown_one_is_named_by_its_command(tmp_path):
    data = str(tmp_path / "data")
    before = jitagent("--data-dir", data, "bank", "adapters")
    after = jitagent("bank", "adapters", "--data-dir", data)
    assert before.returncode == after.returncode == 2 and before.stderr == after.stderr
    # the hint names the bank the user meant, so copying it makes that one (not ~/.jitagent's)
    bank = tmp_path / "data" / "bank.db"
    assert f"create one with `jitagent bank init --bank {bank}`" in before.stderr
    listed = jitagent("--json", "seeds")
    assert listed.returncode == 0 and listed.stdout.lstrip().startswith("[")
    bogus = jitagent("bank", "ls", "--bogus")
    assert bogus.returncode == 2
    assert bogus.stderr.strip() == ("jitagent bank ls: unrecognized arguments: --bogus "
                                    "(see jitagent bank ls --help)")
    assert jitagent("--help", "seeds").stdout.startswith("usage: jitagent [")  # jitagent's own help


def test_an_option_several_commands_take_means_the_same_in_each():
    """`--tool-writer` and `--corrections` meant different things in bench and evolve/train: an option
    name is one meaning, said in the same words wherever it is (each command adds its own default)."""
    helps: dict[str, set[str]] = {}
    for _, parser in parsers():
        for action in parser._actions:
            if action.option_strings and action.option_strings[0] in ("--tool-writer", "--corrections"):
                helps.setdefault(action.option_strings[0], set()).add(
                    action.help.split(";")[0].split(",")[0].split(" (")[0])
    assert helps == {"--tool-writer": {"the model that writes code for clusters"},
                     "--corrections": {"failed runs an expert model corrects at most"}}
