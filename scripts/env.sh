#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment in .venv and install gspo_lab into it.
#
#   source scripts/env.sh EXTRAS      e.g. `source scripts/env.sh test`, or `source scripts/env.sh ""` for none
#                                     (always pass one: a bare `source` hands over the caller's arguments)
#
# By default the exact versions CI tested, from the hashed lock files (requirements/*.lock.txt, written by
# `bash scripts/lock.sh` from pyproject.toml): requirements/main.lock.txt with no extras, all.lock.txt with any.
# `pip install --require-hashes` refuses an editable install, so the locked dependencies go in first and the project
# after them, without dependencies. A lock is per platform: it is used on Linux x86_64 with CPython 3.11 (CI's).
# Elsewhere — or with GSPO_LAB_NO_LOCK=1, or when .venv already holds a torch other than the locked one (install your
# own CPU or CUDA build there first if you like) — the ranges of pyproject.toml are installed instead, torch first:
# a torch already in .venv is kept, otherwise GSPO_LAB_TORCH (default torch==2.13.0, the CPU build) goes in, so the
# package's own range for torch is satisfied and pip adds nothing torch-related.
# Re-running is cheap: the install is skipped while pyproject.toml and the lock are unchanged and the extras asked
# for are the ones installed (no extras: anything installed will do).
set -euo pipefail
_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_extras="${1:-}"
_venv="$_root/.venv"
_py="${GSPO_LAB_PYTHON:-python3}"

_pip() {  # pip, without the warning a machine-wide pip.conf prints for each package of an index folder it lacks
  "$_venv/bin/python" -m pip "$@" 2> >(grep -v "^WARNING: Location '.*' is ignored: it is neither a file nor a directory\.$" >&2)
}
if [ ! -x "$_venv/bin/python" ]; then
  "$_py" -c 'import sys; assert sys.version_info >= (3, 10), "gspo_lab needs Python >= 3.10"'
  echo "[env] creating $_venv with $("$_py" --version)"
  "$_py" -m venv "$_venv"
  _pip install -q --upgrade pip
fi
_lock="$_root/requirements/main.lock.txt"
[ -n "$_extras" ] && _lock="$_root/requirements/all.lock.txt"
_mode="lock"
_why=""
if [ "${GSPO_LAB_NO_LOCK:-}" = "1" ]; then
  _mode="ranges"; _why="GSPO_LAB_NO_LOCK=1"
elif ! "$_venv/bin/python" -c 'import platform, sys; assert sys.platform == "linux" and platform.machine() == "x86_64" and sys.version_info[:2] == (3, 11)' 2>/dev/null; then
  _mode="ranges"; _why="the lock is for Linux x86_64, CPython 3.11"
else
  _locked_torch="$(sed -n 's/^torch==\([^ ]*\).*/\1/p' "$_lock")"
  _have_torch="$("$_venv/bin/python" -c 'import torch; print(torch.__version__)' 2>/dev/null || true)"
  if [ -n "$_have_torch" ] && [ "$_have_torch" != "$_locked_torch" ]; then
    _mode="ranges"; _why=".venv holds torch $_have_torch, the lock pins $_locked_torch: keeping yours"
  fi
fi
_stamp="$_venv/.gspo_lab-installed"  # line 1: hash of pyproject.toml (+ the lock used); line 2: the extras installed
if [ "$_mode" = "lock" ]; then
  _hash="lock $(cat "$_root/pyproject.toml" "$_lock" | sha256sum | cut -d' ' -f1)"
else
  _hash="ranges $(sha256sum "$_root/pyproject.toml" | cut -d' ' -f1)"
fi
_have=""
[ -f "$_stamp" ] && [ "$(sed -n 1p "$_stamp")" = "$_hash" ] && _have="$(sed -n 2p "$_stamp")"
if [ ! -f "$_stamp" ] || [ "$(sed -n 1p "$_stamp")" != "$_hash" ] || { [ -n "$_extras" ] && [ "$_have" != "$_extras" ]; }; then
  _spec="$_root"; [ -n "$_extras" ] && _spec="$_root[$_extras]"
  if [ "$_mode" = "lock" ]; then
    echo "[env] installing the locked dependencies (${_lock#"$_root"/}), then gspo_lab ${_extras:+[$_extras] }(editable)"
    _pip install -q --require-hashes -r "$_lock"
    _pip install -qq --no-deps -e "$_spec"  # -qq: not setuptools' note on every editable build
  else
    echo "[env] not using the lock ($_why): installing pyproject.toml's ranges"
    if ! "$_venv/bin/python" -c 'import torch' 2>/dev/null; then
      echo "[env] installing ${GSPO_LAB_TORCH:-torch==2.13.0}"
      _pip install -q "${GSPO_LAB_TORCH:-torch==2.13.0}"
    fi
    echo "[env] installing gspo_lab ${_extras:+[$_extras] }(editable)"
    _pip install -q -e "$_spec"
  fi
  printf '%s\n%s\n' "$_hash" "${_extras:-$_have}" > "$_stamp"
fi
export PATH="$_venv/bin:$PATH"
export VIRTUAL_ENV="$_venv"
unset _root _extras _py _stamp _hash _have _spec _lock _mode _why _locked_torch _have_torch
unset -f _pip
set +euo pipefail
