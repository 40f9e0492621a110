"""Start-up: leftovers of a killed predecessor are removed; a data dir that cannot be used ends
`serve` with one line and a non-zero status instead of NOT_SERVING forever."""

import asyncio
import os
import subprocess
import sys

import pytest

from harness_bank import HarnessBank
from jitagent.doors.server import JitAgentServer, StartupError

from .conftest import free_port


def under_a_file(tmp_path):
    (tmp_path / "file").write_text("x")
    return tmp_path / "file" / "data"


def test_a_bank_that_cannot_be_opened_stops_the_server_with_one_line(make_config, tmp_path):
    (tmp_path / "data").mkdir()
    HarnessBank(tmp_path / "data" / "bank.db").close()
    (tmp_path / "data" / "bank.db.faiss").write_bytes(b"\x00garbage" * 100)  # faiss cannot read it
    config = make_config().model_copy(update={"data_dir": tmp_path / "data"})
    with pytest.raises(StartupError) as err:
        asyncio.run(asyncio.wait_for(JitAgentServer(config).serve_forever(), 60))
    assert str(err.value).startswith(f"data dir {tmp_path}/data: cannot open the harness bank")
    assert "\n" not in str(err.value)


def test_serve_exits_non_zero_with_one_line_for_an_unusable_data_dir(tmp_path):
    done = subprocess.run([sys.executable, "-m", "jitagent", "serve", "--port", str(free_port()),
                           "--data-dir", str(under_a_file(tmp_path)), "--meta-model", "scripted"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [f"jitagent serve: data dir {tmp_path}/file/data: Not a "
                                                "directory"]


def test_start_removes_the_workspaces_of_a_killed_predecessor(make_config):
    leave_one = "from jitagent.sandbox.launch import Workspace; print(Workspace({'a.txt': 'x'}).root)"
    leftover = subprocess.run([sys.executable, "-c", leave_one], capture_output=True, text=True, check=True)
    leftover = leftover.stdout.strip()
    assert os.path.isdir(leftover)

    async def main():
        server = JitAgentServer(make_config(), build=lambda config: None)
        await server.start()
        await server.stop()
    asyncio.run(main())
    assert not os.path.exists(leftover)
