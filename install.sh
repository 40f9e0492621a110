#!/usr/bin/env bash
# One command sets everything up: a virtual environment with jitagent and its models.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}  # another for another Python (.ci/pythons)
apt_install() {
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q "$@" >/dev/null 2>&1 ||
        { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "$@" >/dev/null 2>&1; }
}
can_apt() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; }
# Sandboxed runs are confined by bubblewrap; without it they fall back to a weaker launcher (README: Sandbox).
if ! command -v bwrap >/dev/null; then
    if can_apt && apt_install bubblewrap; then
        echo "installed bubblewrap (bwrap): sandboxed runs are confined by it"
    else
        echo "bubblewrap (bwrap) is missing and could not be installed here (that needs root and apt-get):" \
             "sandboxed runs will use the weaker fallback launcher; see README, Sandbox" >&2
    fi
fi
# Fleet mode (README: Fleet) runs on PostgreSQL and Redis, and its tests start throwaway ones; without
# them the embedded default works as ever and those tests are skipped, saying why.
have_fleet_services() {
    command -v redis-server >/dev/null &&
        { command -v initdb >/dev/null || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; }
}
if ! have_fleet_services; then
    if can_apt && apt_install postgresql-15 redis-server; then
        echo "installed postgresql-15 and redis-server (fleet mode and its tests)"
    else
        echo "postgresql-15 and redis-server are missing and could not be installed here (that needs" \
             "root and apt-get): install them for fleet mode; its tests are skipped meanwhile" >&2
    fi
fi
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install -q -U pip wheel setuptools
# llama.cpp's default native build dies with SIGILL on some CPUs: build for a portable AVX2 target.
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}"
"$VENV/bin/pip" install -e '.[dev]'
# Assemble and checksum the embedded models once, so the first request does not pay for it.
"$VENV/bin/jitagent" models prepare
echo "jitagent installed: run tests with $VENV/bin/python -m pytest"
