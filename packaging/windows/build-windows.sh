#!/usr/bin/env bash
# Cross-builds darkroom.exe (desktop) and darkroom-cli.exe for Windows (amd64) with mingw-w64, for a zip release.
# Needs: apt-get install gcc-mingw-w64-x86-64. Fyne needs cgo, hence the cross compiler.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -x /usr/local/go/bin/go ]; then export PATH="/usr/local/go/bin:$PATH"; fi
mkdir -p out
CGO_ENABLED=1 GOOS=windows GOARCH=amd64 CC=x86_64-w64-mingw32-gcc \
	go build -trimpath -ldflags "-s -w -H=windowsgui" -o out/darkroom.exe .
# The same program linked as a console binary, so the CLI prints to the terminal.
CGO_ENABLED=1 GOOS=windows GOARCH=amd64 CC=x86_64-w64-mingw32-gcc \
	go build -trimpath -ldflags "-s -w" -o out/darkroom-cli.exe .
echo "built out/darkroom.exe (desktop) and out/darkroom-cli.exe (command line)"
