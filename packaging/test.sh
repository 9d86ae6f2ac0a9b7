#!/usr/bin/env bash
# Runs every Darkroom test: the Go tests (display tests under Xvfb) and the
# real-window check that opens each screen and saves screenshots.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x /usr/local/go/bin/go ]; then export PATH="/usr/local/go/bin:$PATH"; fi
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"

go vet ./...
xvfb-run -a -s "-screen 0 1280x900x24" go test -count=1 -timeout 40m ./... 2>&1 | tee /tmp/darkroom-test.log
status=${PIPESTATUS[0]}
if [ "$status" != 0 ]; then exit "$status"; fi
if [ -x packaging/window-check.sh ]; then
	packaging/window-check.sh
fi
bash packaging/ship-mini-test.sh # shipping a training run as the built-in Mini, on a copy of the repository
bash packaging/dist.sh && bash packaging/dist-check.sh && bash packaging/dist-check-test.sh # the installers, built into dist/, checked as a fresh machine gets them, and the check shown to catch faults
