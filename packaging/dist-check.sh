#!/usr/bin/env bash
# Checks the installers packaging/dist.sh built in dist/:
#   - SHA256SUMS matches every package;
#   - the Linux archive holds the program, its .desktop entry (valid, naming the
#     program and the icon), the icon and install.sh;
#   - the .deb's control fields and files are right, and apt would install it
#     here (a simulated install resolves its dependencies);
#   - Darkroom.exe and darkroom-cli.exe are PE32+ x86-64 programs (GUI and console)
#     whose resource section holds an icon, a version block naming the product
#     and FyneApp.toml's version, and a manifest;
#   - a fresh machine, as the README's install goes: the archive unpacked into an
#     empty folder, install.sh run with an empty HOME, the installed program runs
#     a command on its built-in model and opens its window under Xvfb.
# Fails with a line saying what is wrong.
#
#   packaging/dist-check.sh [DIST]    (default: dist)
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
dist="$(cd "${1:-dist}" && pwd)"

fail() {
	echo "dist-check: $*" >&2
	exit 1
}
. packaging/apt-install.sh
apt_install dist-check file binutils-mingw-w64-x86-64 desktop-file-utils xvfb xauth x11-utils x11-apps unzip xz-utils

toml() { sed -n "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*\"\(.*\)\"[[:space:]]*$/\1/p" FyneApp.toml | head -1; }
name="$(toml Name)"
appid="$(toml ID)"
version="$(toml Version)"
build="$(sed -n 's/^[[:space:]]*Build[[:space:]]*=[[:space:]]*\([0-9]*\).*/\1/p' FyneApp.toml | head -1)"
debarch="$(dpkg --print-architecture)"
tarball="$dist/darkroom-$version-linux-$(go env GOARCH 2>/dev/null || echo "$debarch").tar.xz"
deb="$dist/darkroom_${version}_$debarch.deb"
zip="$dist/darkroom-$version-windows-amd64.zip"
for f in "$tarball" "$deb" "$zip" "$dist/SHA256SUMS"; do
	[ -s "$f" ] || fail "missing $f (run packaging/dist.sh)"
done
(cd "$dist" && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS does not match the packages"
[ "$(wc -l <"$dist/SHA256SUMS")" = 3 ] || fail "SHA256SUMS should list the three packages"

work="$(mktemp -d /tmp/darkroom-dist-check.XXXXXX)"
app=""
cleanup() {
	if [ -n "$app" ]; then kill "$app" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

# Linux archive.
want=(darkroom/install.sh darkroom/Makefile darkroom/usr/local/bin/darkroom
	"darkroom/usr/local/share/applications/$appid.desktop" "darkroom/usr/local/share/pixmaps/$appid.png")
listing="$(tar -tJf "$tarball")"
for f in "${want[@]}"; do
	grep -qx "$f" <<<"$listing" || fail "$(basename "$tarball") lacks $f"
done
mkdir -p "$work/unpack"
tar -xJf "$tarball" -C "$work/unpack"
bin="$work/unpack/darkroom/usr/local/bin/darkroom"
file -b "$bin" | grep -q '^ELF 64-bit LSB .*executable' || fail "the Linux program is not an ELF executable: $(file -b "$bin")"
desktop="$work/unpack/darkroom/usr/local/share/applications/$appid.desktop"
desktop-file-validate "$desktop" || fail "$appid.desktop is not a valid desktop entry"
for line in "Name=$name" "Exec=darkroom" "Icon=$appid" "Type=Application"; do
	grep -qx "$line" "$desktop" || fail "$appid.desktop lacks $line"
done
file -b "$work/unpack/darkroom/usr/local/share/pixmaps/$appid.png" | grep -q '^PNG image data, 512 x 512' ||
	fail "the icon is not a 512×512 PNG"

# .deb.
info="$(dpkg-deb -I "$deb")"
for field in "Package: darkroom" "Version: $version" "Architecture: $debarch"; do
	grep -q "^ $field\$" <<<"$info" || fail "$(basename "$deb") control lacks $field"
done
grep -q "^ Depends: .*libc6" <<<"$info" && grep -q "^ Depends: .*libgl1" <<<"$info" ||
	fail "$(basename "$deb") does not depend on libc6 and libgl1: $(grep Depends <<<"$info")"
contents="$(dpkg-deb -c "$deb")"
for f in "-rwxr-xr-x root/root .* ./usr/bin/darkroom" "-rw-r--r-- root/root .* ./usr/share/applications/$appid.desktop" \
	"-rw-r--r-- root/root .* ./usr/share/icons/hicolor/512x512/apps/$appid.png"; do
	grep -q -- "^$f\$" <<<"$contents" || fail "$(basename "$deb") lacks $f"
done
mkdir -p "$work/deb"
dpkg-deb -x "$deb" "$work/deb"
cmp -s "$work/deb/usr/bin/darkroom" "$bin" || fail "the .deb and the archive hold different programs"
apt-get install -s "$deb" >"$work/apt.log" 2>&1 || fail "apt cannot install $(basename "$deb"): $(tail -n 3 "$work/apt.log")"
grep -q "^Inst darkroom " "$work/apt.log" || fail "apt's simulated install does not install darkroom: $(tail -n 3 "$work/apt.log")"

# Windows zip.
mkdir -p "$work/win"
unzip -q "$zip" -d "$work/win"
for exe in Darkroom.exe darkroom-cli.exe; do
	f="$work/win/darkroom/$exe"
	[ -s "$f" ] || fail "$(basename "$zip") lacks darkroom/$exe"
	kind="GUI"
	if [ "$exe" = darkroom-cli.exe ]; then kind="console"; fi
	file -b "$f" | grep -q "^PE32+ executable ($kind) x86-64" || fail "$exe is not a PE32+ $kind x86-64 program: $(file -b "$f")"
	# The resource directory's top level names the resource types by ID:
	# 3 icon, 14 group icon, 16 version, 24 manifest.
	rsrc="$(x86_64-w64-mingw32-objdump -p "$f" | sed -n '/The .rsrc Resource Directory section/,$p')"
	[ -n "$rsrc" ] || fail "$exe has no resource section"
	for type in 3 14 16 24; do
		grep -qE "^[0-9a-f]+ {3}Entry: ID: 0x0*$(printf '%x' "$type")," <<<"$rsrc" || fail "$exe has no resource of type $type"
	done
	# The version block's strings are UTF-16.
	strings -el "$f" >"$work/strings"
	for s in ProductName "$name" ProductVersion "$version.$build" FileVersion; do
		grep -qx -- "$s" "$work/strings" || fail "$exe's version resource lacks \"$s\""
	done
done

# A fresh machine: the README's install with an empty HOME, then the installed program.
home="$work/home"
mkdir -p "$home"
fresh=(env -i PATH=/usr/bin:/bin HOME="$home" LANG=C.UTF-8)
"${fresh[@]}" sh "$work/unpack/darkroom/install.sh" >"$work/install.log" || fail "install.sh failed: $(cat "$work/install.log")"
installed="$home/.local/bin/darkroom"
[ -x "$installed" ] || fail "install.sh did not install $installed"
grep -qx "Exec=$installed" "$home/.local/share/applications/$appid.desktop" ||
	fail "the installed menu entry does not run $installed"
[ -s "$home/.local/share/icons/hicolor/512x512/apps/$appid.png" ] || fail "install.sh did not install the icon"
got_version=$("${fresh[@]}" "$installed" --version 2>&1) || fail "darkroom --version failed: $got_version"
case "$got_version" in "$name $version (build $build"*) ;; *) fail "darkroom --version says '$got_version', the package $name $version (build $build)" ;; esac
"${fresh[@]}" "$installed" generate --max-new-tokens 16 "What is Unix?" >"$work/generate.out" 2>"$work/generate.err" ||
	fail "darkroom generate on a fresh HOME failed: $(tail -n 3 "$work/generate.err")"
[ -s "$work/generate.out" ] || fail "darkroom generate wrote nothing"

if ! "${fresh[@]}" timeout 120 xvfb-run -a -s "-screen 0 1280x800x24" sh packaging/window-wait.sh "$installed" "$work" "$name"; then
	fail "$(cat "$work/window.err" 2>/dev/null); log: $(tail -n 5 "$work/app.log" 2>/dev/null)"
fi
geometry="$(cat "$work/geometry")"
echo "dist-check: ok ($(basename "$tarball"), $(basename "$deb"), $(basename "$zip"); window ${geometry}; $((SECONDS - start)) s)"
