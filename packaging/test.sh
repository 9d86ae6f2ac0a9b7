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
# The kernels as other CPUs run them, on this one: AVX2 without AVX-512 (most gamers'
# CPUs: AMD's Zen 2 and 3, Intel's desktop cores), neither (GODEBUG hides a feature
# from the kernels' CPU checks), and the portable Go kernels; the host model and the
# weights' loaders on the AVX2 path too.
GODEBUG=cpu.avx512f=off go test -count=1 ./engine/kernels ./engine/weights ./engine/model
GODEBUG=cpu.avx2=off go test -count=1 ./engine/kernels
go test -count=1 -tags noasm ./engine/kernels
if [ -x packaging/window-check.sh ]; then
	packaging/window-check.sh
fi
bash packaging/ship-mini-test.sh # shipping a training run as the built-in Mini, on a copy of the repository
bash packaging/dist.sh && bash packaging/dist-check.sh && bash packaging/wine-check.sh && bash packaging/dist-check-test.sh # the installers, built into dist/, checked as a fresh machine gets them (the Windows one run under Wine), and the check shown to catch faults
