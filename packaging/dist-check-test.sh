#!/usr/bin/env bash
# Proves that packaging/dist-check.sh catches broken installers: copies the
# packages packaging/dist.sh built, breaks one thing at a time (a checksum, the
# archive's install.sh, the menu entry's icon, the .deb's dependencies, the
# Windows resources, the GUI program, a Linux program that opens no window or is
# another version's) and
# wants dist-check.sh to fail, naming what is wrong.
#
#   packaging/dist-check-test.sh [DIST]    (default: dist)
set -euo pipefail
cd "$(dirname "$0")/.."
dist="$(cd "${1:-dist}" && pwd)"
version="$(sed -n 's/^[[:space:]]*Version[[:space:]]*=[[:space:]]*"\(.*\)".*/\1/p' FyneApp.toml | head -1)"
work="$(mktemp -d /tmp/darkroom-dist-check-test.XXXXXX)"
trap 'rm -rf "$work"' EXIT
d="$work/dist"
tarball="$d/darkroom-$version-linux-$(go env GOARCH).tar.xz"
deb="$d/darkroom_${version}_$(dpkg --print-architecture).deb"
zip="$d/darkroom-$version-windows-amd64.zip"

fresh() {
	rm -rf "$d" "$work/t" "$work/r" "$work/w"
	cp -a "$dist" "$d"
}
sums() { (cd "$d" && sha256sum -- *.tar.xz *.deb *.zip >SHA256SUMS); }
expect() { # FAULT MESSAGE: dist-check must fail with MESSAGE
	local out
	if out="$(bash packaging/dist-check.sh "$d" 2>&1)"; then
		echo "dist-check-test: $1: dist-check.sh passed" >&2
		exit 1
	fi
	if ! grep -qF -- "$2" <<<"$out"; then
		echo "dist-check-test: $1: dist-check.sh failed, but not with \"$2\":" >&2
		tail -n 3 <<<"$out" >&2
		exit 1
	fi
	echo "dist-check-test: $1: caught"
}
untar() { mkdir -p "$work/t" && tar -xJf "$tarball" -C "$work/t"; }
retar() { XZ_OPT=-0 tar -cJf "$tarball" -C "$work/t" darkroom; } # fast: the check does not look at the compression
undeb() { dpkg-deb -R "$deb" "$work/r"; }
redeb() { dpkg-deb --root-owner-group -Zgzip -z1 -b "$work/r" "$deb" >/dev/null; }
unzipw() { mkdir -p "$work/w" && unzip -q "$zip" -d "$work/w"; }
rezip() { rm "$zip" && (cd "$work/w" && zip -qr -X "$zip" darkroom); }

fresh
sed -i '1s/^0/X/;1s/^[1-9a-f]/0/;1s/^X/1/' "$d/SHA256SUMS" # the first digest's first digit changed, whatever it was
expect "a wrong checksum" "SHA256SUMS does not match"

fresh
untar && rm "$work/t/darkroom/install.sh" && retar && sums
expect "no install.sh" "lacks darkroom/install.sh"

fresh
untar && sed -i '/^Icon=/d' "$work/t/darkroom/usr/local/share/applications/"*.desktop && retar && sums
expect "a menu entry without its icon" "desktop lacks Icon="

fresh
undeb && sed -i '/^Depends:/d' "$work/r/DEBIAN/control" && redeb && sums
expect "a .deb without dependencies" "does not depend on libc6 and libgl1"

fresh
unzipw && x86_64-w64-mingw32-objcopy --remove-section=.rsrc "$work/w/darkroom/Darkroom.exe" && rezip && sums
expect "an .exe without resources" "Darkroom.exe has no resource section"

fresh
unzipw && cp "$work/w/darkroom/darkroom-cli.exe" "$work/w/darkroom/Darkroom.exe" && rezip && sums
expect "a console program as the desktop app" "Darkroom.exe is not a PE32+ GUI x86-64 program"

# A Linux program that answers commands (its --version as the package's) but opens no window, and one whose
# --version is another's.
name="$(sed -n 's/^[[:space:]]*Name[[:space:]]*=[[:space:]]*"\(.*\)".*/\1/p' FyneApp.toml | head -1)"
build="$(sed -n 's/^[[:space:]]*Build[[:space:]]*=[[:space:]]*\([0-9]*\).*/\1/p' FyneApp.toml | head -1)"
fake() { # VERSIONLINE OUT: a program printing VERSIONLINE for --version, "text" for other commands, no window
	printf '#include <stdio.h>\n#include <string.h>\nint main(int argc, char **argv) { if (argc > 1) puts(strcmp(argv[1], "--version") ? "text" : "%s"); return 0; }\n' "$1" >"$2.c"
	gcc -o "$2" "$2.c"
}
fake "$name $version (build $build, go1, linux/amd64)" "$work/nowindow"
fresh
untar && cp "$work/nowindow" "$work/t/darkroom/usr/local/bin/darkroom" && retar
undeb && cp "$work/nowindow" "$work/r/usr/bin/darkroom" && redeb && sums
expect "a program that opens no window" "no window: the program exited before a window opened"

fake "$name 0.0.9 (build $build, go1, linux/amd64)" "$work/oldversion"
fresh
untar && cp "$work/oldversion" "$work/t/darkroom/usr/local/bin/darkroom" && retar
undeb && cp "$work/oldversion" "$work/r/usr/bin/darkroom" && redeb && sums
expect "a program of another version" "darkroom --version says '$name 0.0.9"

echo "dist-check-test: ok (dist-check.sh caught every fault)"
