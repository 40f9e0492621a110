"""The committed gRPC stubs are exactly what scripts/gen_protos.sh generates."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_regenerating_the_stubs_changes_nothing(tmp_path):
    subprocess.run(["bash", str(ROOT / "scripts" / "gen_protos.sh"), str(tmp_path)], check=True,
                   env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})
    for name in ("jitagent_pb2.py", "jitagent_pb2.pyi", "jitagent_pb2_grpc.py"):
        generated = (tmp_path / "jitagent" / "v1" / name).read_text()
        assert generated == (ROOT / "jitagent" / "v1" / name).read_text(), name
