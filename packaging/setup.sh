#!/usr/bin/env bash
# Installs everything Darkroom needs to build, run and test on Debian/Ubuntu:
# the C libraries Fyne links against, Xvfb for headless window tests, Node.js/npm
# for the tokenizer conformance test, Go (if missing) and the Go modules.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(gcc pkg-config libgl1-mesa-dev xorg-dev xvfb xauth x11-apps curl unzip ca-certificates jq) # jq: packaging/ship-mini.sh, wine-check.sh
command -v npm >/dev/null 2>&1 || pkgs+=(nodejs npm)
command -v go >/dev/null 2>&1 || pkgs+=(golang-go)
. packaging/apt-install.sh
apt_install setup "${pkgs[@]}"
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

if [ -x /usr/local/go/bin/go ]; then export PATH="/usr/local/go/bin:$PATH"; fi

# Go 1.21 and later fetch the toolchain go.mod asks for from the module proxy by
# themselves (GOTOOLCHAIN=auto). An older distribution Go (Debian 12 ships 1.19)
# cannot, so fetch that toolchain from the same proxy once and link it into
# /usr/local/bin, where the README's `go run` finds it.
want="$(sed -n 's/^go \([0-9.]*\)$/\1/p' go.mod)"
minor="$(go env GOVERSION | sed -n 's/^go1\.\([0-9]*\).*/\1/p')"
if [ -z "$minor" ] || [ "$minor" -lt 21 ]; then
	proxy="$(go env GOPROXY | cut -d, -f1)"
	case "$proxy" in http*) ;; *) echo "setup: Go $(go env GOVERSION) is too old and GOPROXY has no proxy to fetch go$want from" >&2; exit 1 ;; esac
	arch="$(go env GOHOSTARCH)"
	dest="/usr/local/lib/darkroom-go$want"
	if [ ! -x "$dest/bin/go" ]; then
		echo "setup: fetching Go $want (the distribution's Go is $(go env GOVERSION))"
		tmp="$(mktemp -d)"
		curl -fsSL -o "$tmp/go.zip" "$proxy/golang.org/toolchain/@v/v0.0.1-go$want.linux-$arch.zip"
		unzip -q "$tmp/go.zip" -d "$tmp"
		$SUDO rm -rf "$dest"
		$SUDO mv "$tmp/golang.org/toolchain@v0.0.1-go$want.linux-$arch" "$dest"
		$SUDO chmod -R a+rX "$dest"
		rm -rf "$tmp"
	fi
	$SUDO ln -sf "$dest/bin/go" "$dest/bin/gofmt" /usr/local/bin/
	hash -r
fi
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
go mod download
echo "setup: ready ($(go version))"
