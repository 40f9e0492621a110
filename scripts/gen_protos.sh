#!/usr/bin/env bash
# Regenerate the committed gRPC stubs from proto/. The output mirrors the proto package path
# (jitagent/v1/), so the generated absolute imports (`from jitagent.v1 import ...`) resolve.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
OUT=${1:-.}
"$PY" -m grpc_tools.protoc -Iproto --python_out="$OUT" --pyi_out="$OUT" --grpc_python_out="$OUT" proto/jitagent/v1/jitagent.proto
