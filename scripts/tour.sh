#!/usr/bin/env bash
# Set up collkit and take the tour: list, show, verify, simulate, run and tune algorithms here.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/collkit tour "$@"
