#!/usr/bin/env bash
# Regenerate the committed gRPC stubs from proto/. The output mirrors the proto package path
# (jitagent/v1/), so the generated absolute imports (`from jitagent.v1 import ...`) resolve.
# google/rpc/*.proto come from the googleapis-common-protos package (a dependency of grpcio-status).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
OUT=${1:-.}
GOOGLEAPIS=$("$PY" -c 'import pathlib, google.rpc; print(pathlib.Path(google.rpc.__path__[0]).parents[1])')
"$PY" -m grpc_tools.protoc -Iproto -I"$GOOGLEAPIS" --python_out="$OUT" --pyi_out="$OUT" --grpc_python_out="$OUT" \
    proto/jitagent/v1/jitagent.proto
