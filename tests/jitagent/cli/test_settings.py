"""`jitagent serve`'s settings: the command line over JITAGENT_* over --config over the defaults."""

import argparse
import subprocess
import sys

import pytest

from jitagent.cli import settings
from jitagent.cli.options import Failure


def parsed(argv, environ=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    settings.add_arguments(parser, settings.SERVE, config=True)
    args = parser.parse_args(argv)
    settings.resolve(args, environ or {})
    return args


def test_the_command_line_wins_then_the_environment_then_the_file_then_the_default(tmp_path):
    config = tmp_path / "jitagent.toml"
    config.write_text('port = 6000\nmeta-model = "http://gpu:8000"\nno-dry-run = true\nconcurrency = 4\n')
    args = parsed(
        ["--config", str(config), "--concurrency", "2"], {"JITAGENT_PORT": "7000", "JITAGENT_DATA": "/d"}
    )
    assert (args.concurrency, args.port, args.meta_model, args.no_dry_run) == (
        2,
        7000,
        "http://gpu:8000",
        True,
    )
    assert (
        str(args.data_dir) == "/d"
        and args.host == "127.0.0.1"
        and args.grace == 10.0
        and args.log_format == "json"
    )
    assert parsed([], {"JITAGENT_NO_DRY_RUN": "no", "JITAGENT_LOG_FORMAT": "text"}).log_format == "text"


@pytest.mark.parametrize(
    "environ, config, fragment",
    [
        ({"JITAGENT_PORT": "eighty"}, None, "JITAGENT_PORT: expected an integer, got 'eighty'"),
        ({"JITAGENT_NO_DRY_RUN": "maybe"}, None, "JITAGENT_NO_DRY_RUN: expected true or false"),
        ({"JITAGENT_LOG_FORMAT": "xml"}, None, "JITAGENT_LOG_FORMAT: expected json or text"),
        ({}, "prot = 1\n", "unknown setting(s) prot"),
        ({}, "port = [1]\n", "port: expected an integer"),
        ({}, "port = \n", "not TOML"),
    ],
)
def test_a_value_that_does_not_parse_names_where_it_came_from(tmp_path, environ, config, fragment):
    argv = []
    if config is not None:
        (tmp_path / "c.toml").write_text(config)
        argv = ["--config", str(tmp_path / "c.toml")]
    with pytest.raises(Failure) as refused:
        parsed(argv, environ)
    assert fragment in str(refused.value) and refused.value.status == 2


def test_serve_with_a_bad_variable_stops_before_loading_anything():
    done = subprocess.run(
        [sys.executable, "-m", "jitagent", "serve"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "JITAGENT_PORT": "eighty"},
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "jitagent serve: JITAGENT_PORT: expected an integer, got 'eighty'"
    ]


@pytest.mark.parametrize("command", [["synthesize", "1+1"], ["solve", "1+1"], ["mcp"], ["worker"],
                                     ["bench", "--suite", "starter"], ["serve"]])
def test_every_command_that_synthesizes_takes_n_from_the_environment_in_its_range(command):
    from jitagent.cli.main import build_parser

    for value, expected in (("2", 2), (None, 3)):  # the default: SynthesisConfig's
        args = build_parser().parse_args(command)
        settings.resolve(args, {} if value is None else {"JITAGENT_N": value})
        assert args.n == expected
    for bad, why in (("99", "JITAGENT_N: must be between 1 and 8, got 99"),
                     ("abc", "JITAGENT_N: expected an integer, got 'abc'")):
        with pytest.raises(Failure, match=why):
            settings.resolve(build_parser().parse_args(command), {"JITAGENT_N": bad})


def test_a_setting_s_default_is_its_config_model_s():
    from jitagent.doors.server import ServerConfig

    fields = ServerConfig.model_fields
    for s in settings.SERVE:
        if isinstance(s.default, settings.FieldDefault) and s.default.model == settings.SERVER:
            assert s.value == fields[s.default.field].default, s.flag
