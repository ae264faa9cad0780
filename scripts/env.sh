#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment in .venv and install gspo_lab into it.
#
#   source scripts/env.sh [EXTRAS]      e.g. `source scripts/env.sh test`
#
# Order matters: torch first, then the package. A torch already in .venv is kept (install your own CPU or CUDA
# build there first if you like); otherwise GSPO_LAB_TORCH (default torch==2.13.0, the CPU build) is installed.
# The package's own range for torch is then satisfied and pip adds nothing torch-related.
# Re-running is cheap: the install is skipped while pyproject.toml and the extras are unchanged.
set -euo pipefail
_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_extras="${1:-}"
_venv="$_root/.venv"
_py="${GSPO_LAB_PYTHON:-python3}"

if [ ! -x "$_venv/bin/python" ]; then
  "$_py" -c 'import sys; assert sys.version_info >= (3, 10), "gspo_lab needs Python >= 3.10"'
  echo "[env] creating $_venv with $("$_py" --version)"
  "$_py" -m venv "$_venv"
  "$_venv/bin/python" -m pip install -q --upgrade pip
fi
if ! "$_venv/bin/python" -c 'import torch' 2>/dev/null; then
  echo "[env] installing ${GSPO_LAB_TORCH:-torch==2.13.0}"
  "$_venv/bin/python" -m pip install -q "${GSPO_LAB_TORCH:-torch==2.13.0}"
fi
_stamp="$_venv/.gspo_lab-installed"
_want="$(cat "$_root/pyproject.toml" | sha256sum | cut -d' ' -f1) extras=[$_extras]"
if [ ! -f "$_stamp" ] || ! grep -qxF -- "$_want" "$_stamp"; then
  _spec="$_root"; [ -n "$_extras" ] && _spec="$_root[$_extras]"
  echo "[env] installing gspo_lab ${_extras:+[$_extras] }(editable)"
  "$_venv/bin/python" -m pip install -q -e "$_spec"
  echo "$_want" > "$_stamp"
fi
export PATH="$_venv/bin:$PATH"
export VIRTUAL_ENV="$_venv"
unset _root _extras _py _stamp _want _spec
set +euo pipefail
