#!/usr/bin/env bash
# Builds the desktop app from source with progress (packaging/build.sh: the first
# build takes minutes, later ones seconds) and starts it; arguments go to darkroom,
# so `packaging/run.sh help` runs the CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/build.sh darkroom -tags migrated_fynedo
exec ./darkroom "$@"
