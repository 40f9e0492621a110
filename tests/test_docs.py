"""Every `jitagent` command the README and docs/ show is a command the CLI has (its `--help` renders), so a
page cannot drift from the tree; the README's first screen holds what a new user needs before any link."""

import argparse
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from jitagent.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]


def shown_commands():
    """(page, line, argv after `jitagent`) of every command line in a code block of the pages."""
    for page in PAGES:
        in_code = False
        for number, line in enumerate(page.read_text().splitlines(), 1):
            if line.startswith("```"):
                in_code = not in_code
                continue
            command = re.search(r"(?:^|&&\s*|\$\s*)(?:\S*/)?jitagent\s+(.*)$", line.split(" #")[0].strip())
            if in_code and (match := command):
                try:
                    argv = shlex.split(match.group(1).replace("\\", ""))
                except ValueError:  # a line continued on the next: its first words are the command
                    argv = match.group(1).split()
                yield page.name, number, argv


def command_path(parser: argparse.ArgumentParser, argv: list[str]):
    path = []
    for word in argv:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or word not in subs[0].choices:
            break
        path.append(word)
        parser = subs[0].choices[word]
    return path, parser


def test_every_command_the_docs_show_is_one_the_cli_has():
    parser, seen = build_parser(), 0
    for page, number, argv in shown_commands():
        if not argv or argv[0].startswith("-"):
            continue
        path, leaf = command_path(parser, argv)
        assert path, f"{page}:{number}: `jitagent {' '.join(argv)}` names no command"
        subs = [a for a in leaf._actions if isinstance(a, argparse._SubParsersAction)]
        assert not subs or len(argv) > len(path) and argv[len(path)].startswith("-"), (
            f"{page}:{number}: `jitagent {' '.join(path)}` needs a subcommand")
        assert leaf.format_help(), (page, number)
        seen += 1
    assert seen > 20  # the pages show many commands: a scan that finds none is a broken test


def test_the_readme_first_screen_holds_what_a_new_user_needs():
    text = (ROOT / "README.md").read_text()
    first = text[:text.index("](docs/")].splitlines()
    assert len(first) <= 60
    screen = "\n".join(first)
    for needed in ("What it has measured", "BENCHMARKS.md", "Install", "GB", "--meta-model scripted",
                   "A first real solve", "base_url", "mcpServers", "JitAgent("):
        assert needed in screen, needed


def test_the_settings_table_lists_every_setting_serve_takes():
    from jitagent.cli import settings

    page = (ROOT / "docs" / "integration.md").read_text()
    rows = [line for line in page.splitlines() if line.startswith("| `--")]
    missing = [s.flag for s in settings.SERVE if not any(f"`{s.flag}`" in row for row in rows)]
    assert missing == []


def readme_solves():
    """(command, the result line the README shows) of each `jitagent solve` example on its first screen."""
    lines = (ROOT / "README.md").read_text().splitlines()
    for command, shown in zip(lines, lines[1:]):
        if command.startswith(".venv/bin/jitagent solve") and shown.startswith("# result: "):
            yield command.split("  #")[0], shown.removeprefix("# result: ")


@pytest.mark.slow
def test_the_readme_solves_give_the_results_it_shows_with_the_embedded_model(tmp_path):
    """The README's smoke test and first real solve, run as written (the bank in a throwaway data dir):
    each prints the result line the README shows (run ids aside), so an example the default model gets
    wrong cannot stay on the front page."""
    examples = list(readme_solves())
    assert len(examples) == 2
    for command, shown in examples:
        argv = shlex.split(command.replace(".venv/bin/jitagent", "", 1))
        if "--data-dir" in argv:  # a fresh one each time: a warm cluster would route another way
            argv[argv.index("--data-dir") + 1] = str(tmp_path / "smoke")
        else:
            argv += ["--data-dir", str(tmp_path / "data")]
        done = subprocess.run([sys.executable, "-m", "jitagent", *argv], capture_output=True, text=True,
                              timeout=600)
        result = done.stdout.strip().splitlines()[-1].removeprefix("result: ")
        assert done.returncode == 0 and re.sub(r"run_id=\S+ ", "", result) == shown.replace("run_id=… ", "")
