#!/usr/bin/env bash
# Create .venv (if missing) and install DocMaster with its pinned dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
# Some machines' pip configuration names local package folders that do not exist; pip then
# prints one "Location ... is ignored" warning per package (a hundred lines that say nothing
# about DocMaster). Those lines only are left out; pip's other output and its exit status stay.
pip_install() {
    .venv/bin/python -m pip install "$@" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }
}
pip_install -q --upgrade pip
pip_install -q -r requirements.txt
pip_install -q --no-deps -e .
