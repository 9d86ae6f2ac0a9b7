#!/usr/bin/env bash
# Builds the darkroom binary as `go build -o OUT [FLAGS] .` does, but says what it
# is doing: the first build compiles several hundred packages (GoMLX, Fyne and the
# C code of its window libraries) and takes minutes, so it counts the packages
# as they compile instead of staying silent, and silences the C compiler's
# deprecation warnings, which are the libraries' and nothing to act on.
#
#   packaging/build.sh OUT [go build flags]   e.g. packaging/build.sh darkroom -tags migrated_fynedo
#
# GOOS, GOARCH, CC and CGO_ENABLED are read from the environment, as go build does.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x /usr/local/go/bin/go ]; then export PATH="/usr/local/go/bin:$PATH"; fi
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"

if [ $# -lt 1 ]; then
	echo "usage: packaging/build.sh OUT [go build flags]" >&2
	exit 2
fi
out="$1"
shift
# -w: no warnings from cgo's C compiles; -O2 -g are go's defaults, kept.
export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g} -w"

target="$(go env GOOS)/$(go env GOARCH)"
total="$(go list -deps "$@" . | wc -l)"
tty=0
if [ -t 2 ]; then tty=1; fi
echo "build: darkroom for $target, $total packages; the first build compiles them all and takes minutes, later ones seconds" >&2
start=$SECONDS
set +e
# go build -v names each package as it starts compiling it (cached ones are not
# named): on a terminal one line counts them, elsewhere (logs) each gets a line.
# Any other line (an error, a "# pkg" heading) is passed through as it is.
go build -v -o "$out" "$@" . 2>&1 | {
	n=0
	drawn=0
	while IFS= read -r line; do
		if [[ "$line" =~ ^[A-Za-z0-9._~/-]+$ ]]; then
			n=$((n + 1))
			if [ "$tty" = 1 ]; then
				printf '\rbuild: %d/%d packages, compiling %s\033[K' "$n" "$total" "$line" >&2
				drawn=1
			else
				printf 'build: %d/%d packages, compiling %s\n' "$n" "$total" "$line" >&2
			fi
			continue
		fi
		if [ "$drawn" = 1 ]; then printf '\n' >&2; fi
		drawn=0
		printf '%s\n' "$line" >&2
	done
	if [ "$drawn" = 1 ]; then printf '\n' >&2; fi
}
status=${PIPESTATUS[0]}
set -e
if [ "$status" != 0 ]; then
	echo "build: go build failed (status $status)" >&2
	exit "$status"
fi
echo "build: $out for $target in $((SECONDS - start)) s" >&2
