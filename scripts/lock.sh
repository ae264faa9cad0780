#!/usr/bin/env bash
# Refresh the lock files from pyproject.toml (run after changing a dependency; tests/test_lock.py fails until you do):
#   bash scripts/lock.sh                            keeps every existing pin that still fits, adds what is new
#   GSPO_LAB_LOCK_UPGRADE=1 bash scripts/lock.sh    resolves from scratch (the newest versions in range)
# requirements/all.lock.txt: the project with its test, bench and cluster extras (what CI tests); requirements/main.lock.txt:
# the main job's and JupyterLab's set, resolved inside all's pins so every shared package has one version.
# Hashed pins for Linux x86_64, CPython 3.11 (the platform CI runs), torch the CPU build (requirements/torch.in).
# pip-tools resolves through pip itself, so through this machine's pip configuration (its extra indexes hold the CPU
# torch; a locker that ignores them, such as uv, would lock PyPI's multi-GB CUDA build).
set -euo pipefail
cd "$(dirname "$0")/.."
tools="${GSPO_LAB_LOCK_VENV:-$HOME/.cache/gspo-lab/lock-venv}"
if [ ! -x "$tools/bin/pip-compile" ]; then
  python3 -m venv "$tools"
  "$tools/bin/pip" install -q --upgrade pip "pip-tools>=7.4,<8"
fi
stamp="$(python3 scripts/lock_stamp.py)"
compile() {  # out, extra args...
  local out="$1"; shift
  # pip-compile keeps the pins it finds in its output file: seed it with the current lock unless upgrading
  if [ "${GSPO_LAB_LOCK_UPGRADE:-}" = "1" ]; then rm -f "$out.tmp"; else cp "$out" "$out.tmp"; fi
  "$tools/bin/pip-compile" -q --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url \
    --no-emit-find-links --output-file "$out.tmp" "$@" pyproject.toml requirements/torch.in
  { echo "# $stamp"; cat "$out.tmp"; } > "$out"
  rm -f "$out.tmp"
}
compile requirements/all.lock.txt --extra test --extra bench --extra cluster
compile requirements/main.lock.txt --constraint requirements/all.lock.txt
echo "[lock] wrote requirements/all.lock.txt ($(grep -c '^[a-z0-9]' requirements/all.lock.txt) pins)" \
     "and requirements/main.lock.txt ($(grep -c '^[a-z0-9]' requirements/main.lock.txt) pins)"
