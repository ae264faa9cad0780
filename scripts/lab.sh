#!/usr/bin/env bash
# The lab: set up .venv (see scripts/env.sh), install the gspo-lab kernel into it, open JupyterLab on notebooks/.
#   bash scripts/lab.sh [jupyter lab args, e.g. --no-browser --port 8890]
# No extension build: ipywidgets 8 and jupytext ship prebuilt JupyterLab extensions (`jupyter labextension list`).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh ""  # "" = no extras (a bare `source` would hand it this script's arguments)
set -euo pipefail
python -c "from gspo_lab.nb.run import ensure_kernel; ensure_kernel()"
exec jupyter lab --notebook-dir=notebooks "$@"
