#!/usr/bin/env bash
# Installs everything Darkroom needs to build, run and test on Debian/Ubuntu:
# the C libraries Fyne links against, Xvfb for headless window tests, Node.js/npm
# for the tokenizer conformance test, Go (if missing) and the Go modules.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

pkgs=(gcc pkg-config libgl1-mesa-dev xorg-dev xvfb xauth x11-apps)
command -v npm >/dev/null 2>&1 || pkgs+=(nodejs npm)
command -v go >/dev/null 2>&1 || pkgs+=(golang-go)
missing=()
for p in "${pkgs[@]}"; do
	dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing ${missing[*]}"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# An older Go fetches the toolchain go.mod asks for from the module proxy.
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
if [ -x /usr/local/go/bin/go ]; then export PATH="/usr/local/go/bin:$PATH"; fi
go mod download
echo "setup: ready ($(go version))"
