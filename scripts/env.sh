#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment in .venv and install gspo_lab into it.
#
#   source scripts/env.sh EXTRAS      e.g. `source scripts/env.sh test`, or `source scripts/env.sh ""` for none
#                                     (always pass one: a bare `source` hands over the caller's arguments)
#
# Order matters: torch first, then the package. A torch already in .venv is kept (install your own CPU or CUDA
# build there first if you like); otherwise GSPO_LAB_TORCH (default torch==2.13.0, the CPU build) is installed.
# The package's own range for torch is then satisfied and pip adds nothing torch-related.
# Re-running is cheap: the install is skipped while pyproject.toml is unchanged and the extras asked for are the
# ones installed (no extras: anything installed will do).
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
_stamp="$_venv/.gspo_lab-installed"  # line 1: hash of pyproject.toml; line 2: the extras installed with it
_hash="$(sha256sum "$_root/pyproject.toml" | cut -d' ' -f1)"
_have=""
[ -f "$_stamp" ] && [ "$(sed -n 1p "$_stamp")" = "$_hash" ] && _have="$(sed -n 2p "$_stamp")"
if [ ! -f "$_stamp" ] || [ "$(sed -n 1p "$_stamp")" != "$_hash" ] || { [ -n "$_extras" ] && [ "$_have" != "$_extras" ]; }; then
  _spec="$_root"; [ -n "$_extras" ] && _spec="$_root[$_extras]"
  echo "[env] installing gspo_lab ${_extras:+[$_extras] }(editable)"
  "$_venv/bin/python" -m pip install -q -e "$_spec"
  printf '%s\n%s\n' "$_hash" "${_extras:-$_have}" > "$_stamp"
fi
export PATH="$_venv/bin:$PATH"
export VIRTUAL_ENV="$_venv"
unset _root _extras _py _stamp _hash _have _spec
set +euo pipefail
