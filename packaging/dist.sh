#!/usr/bin/env bash
# Builds Darkroom's installers into dist/ from this working tree, on Debian or Ubuntu:
#
#   darkroom-VERSION-linux-ARCH.tar.xz    `fyne package`: darkroom/usr/local/bin/darkroom, its .desktop entry and
#                                         icon, fyne's Makefile, and install.sh (installs for the user, no root)
#   darkroom_VERSION_ARCH.deb             the same program, entry and icon under /usr, for `apt install ./…deb`
#   darkroom-VERSION-windows-amd64.zip    Darkroom.exe (the desktop app) and darkroom-cli.exe (the command line),
#                                         cross-built with mingw-w64, each with the icon and version resources
#   SHA256SUMS
#
# The name, version, app ID, icon and descriptions come from FyneApp.toml. The
# script installs what it needs: apt packages (with sudo when not root) and the
# fyne and go-winres tools through the Go module proxy. It builds from a copy of
# the tree (the tracked files and the untracked ones git does not ignore), so the
# Windows resource file never lands in the working tree. packaging/dist-check.sh
# checks what it built.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x /usr/local/go/bin/go ]; then export PATH="/usr/local/go/bin:$PATH"; fi
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
start=$SECONDS

. packaging/apt-install.sh
apt_install dist gcc pkg-config libgl1-mesa-dev xorg-dev gcc-mingw-w64-x86-64 dpkg-dev xz-utils zip

# The packaging tools, pinned; installed once into GOPATH/bin.
tools="$(go env GOPATH)/bin"
tool() { # NAME PACKAGE VERSION
	local bin="$tools/$1"
	if [ ! -x "$bin" ] || ! go version -m "$bin" 2>/dev/null | grep -q "^[[:space:]]mod[[:space:]].*[[:space:]]$3[[:space:]]"; then
		echo "dist: installing $2@$3" >&2
		(cd / && GOFLAGS=-buildvcs=false go install "$2@$3")
	fi
	echo "$bin"
}
fyne="$(tool fyne fyne.io/tools/cmd/fyne v1.7.4)"
winres="$(tool go-winres github.com/tc-hib/go-winres v0.3.3)"

# FyneApp.toml: the one place for the app's name, ID, version and descriptions.
toml() { sed -n "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*\"\(.*\)\"[[:space:]]*$/\1/p" FyneApp.toml | head -1; }
name="$(toml Name)"
appid="$(toml ID)"
version="$(toml Version)"
build="$(sed -n 's/^[[:space:]]*Build[[:space:]]*=[[:space:]]*\([0-9]*\).*/\1/p' FyneApp.toml | head -1)"
description="$(toml Description)"
genericname="$(toml GenericName)"
website="$(toml Website)"
icon="$(toml Icon)"
for v in name appid version build description genericname icon; do
	if [ -z "${!v}" ]; then
		echo "dist: FyneApp.toml has no $v" >&2
		exit 1
	fi
done
arch="$(go env GOARCH)"

work="$(mktemp -d /tmp/darkroom-dist.XXXXXX)"
trap 'rm -rf "$work"' EXIT
src="$work/darkroom"
mkdir -p "$src"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
		xargs -0 cp --parents -t "$src"
else
	tar --exclude=./dist --exclude=./out -cf - . | tar -xf - -C "$src"
fi
dist="$PWD/dist"
rm -rf "$dist"
mkdir -p dist
flags=(-trimpath -buildvcs=false -tags migrated_fynedo)

echo "dist: $name $version (build $build): Linux $arch"
mkdir -p "$work/linux"
CGO_ENABLED=1 "$src/packaging/build.sh" "$work/linux/darkroom" "${flags[@]}" -ldflags "-s -w"
# fyne writes the .desktop entry from FyneApp.toml and packs darkroom/ (usr/local/… and a Makefile).
(cd "$src" && "$fyne" package -os linux --executable "$work/linux/darkroom" --release >/dev/null)
tar -xJf "$src/$name.tar.xz" -C "$work/linux"
pkgdir="$work/linux/darkroom"
desktop="$pkgdir/usr/local/share/applications/$appid.desktop"
for f in usr/local/bin/darkroom "usr/local/share/pixmaps/$appid.png" Makefile; do
	if [ ! -f "$pkgdir/$f" ] || [ ! -f "$desktop" ]; then
		echo "dist: fyne package made no $f or $desktop" >&2
		exit 1
	fi
done
cat >"$pkgdir/install.sh" <<INSTALL
#!/bin/sh
# Installs $name for the current user, no root needed: the program in ~/.local/bin,
# the applications-menu entry and the icon. (With make: \`make user-install\`.)
set -e
here="\$(cd "\$(dirname "\$0")" && pwd)"
data="\${XDG_DATA_HOME:-\$HOME/.local/share}"
install -Dm755 "\$here/usr/local/bin/darkroom" "\$HOME/.local/bin/darkroom"
install -Dm644 "\$here/usr/local/share/pixmaps/$appid.png" "\$data/icons/hicolor/512x512/apps/$appid.png"
sed "s|^Exec=darkroom|Exec=\$HOME/.local/bin/darkroom|" "\$here/usr/local/share/applications/$appid.desktop" >"\$here/.desktop.tmp"
install -Dm644 "\$here/.desktop.tmp" "\$data/applications/$appid.desktop"
rm -f "\$here/.desktop.tmp"
echo "$name is installed: open it from the applications menu, or run ~/.local/bin/darkroom"
INSTALL
chmod 755 "$pkgdir/install.sh"
tar -cJf "dist/darkroom-$version-linux-$arch.tar.xz" --owner=0 --group=0 -C "$work/linux" darkroom

echo "dist: .deb"
deb="$work/deb"
install -Dm755 "$pkgdir/usr/local/bin/darkroom" "$deb/usr/bin/darkroom"
install -Dm644 "$desktop" "$deb/usr/share/applications/$appid.desktop"
install -Dm644 "$src/$icon" "$deb/usr/share/icons/hicolor/512x512/apps/$appid.png"
# The shared libraries the binary links (libGL, libX11, libc…), as Debian package names and versions.
mkdir -p "$work/shlibs/debian"
printf 'Source: darkroom\n\nPackage: darkroom\nArchitecture: any\n' >"$work/shlibs/debian/control"
depends="$(cd "$work/shlibs" && dpkg-shlibdeps -O "$deb/usr/bin/darkroom" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')"
if [ -z "$depends" ]; then
	echo "dist: dpkg-shlibdeps found no dependencies of the binary" >&2
	exit 1
fi
mkdir -p "$deb/DEBIAN"
cat >"$deb/DEBIAN/control" <<CONTROL
Package: darkroom
Version: $version
Architecture: $(dpkg --print-architecture)
Maintainer: Darkroom Labs <$website>
Installed-Size: $(du -sk "$deb/usr" | cut -f1)
Depends: $depends
Section: science
Priority: optional
Homepage: $website
Description: $genericname
 $description
CONTROL
dpkg-deb --root-owner-group -Zxz --build "$deb" "dist/darkroom_${version}_$(dpkg --print-architecture).deb" >/dev/null

echo "dist: Windows amd64 (mingw-w64)"
win="$work/windows/darkroom"
mkdir -p "$win"
winversion="$version.$build"
# go-winres writes rsrc_windows_amd64.syso into the main package's folder, where
# go build links it into the .exe: the icon, the version block and a manifest
# ("gui" for the desktop app, "cli" for the console program).
resources() { # MANIFEST FILENAME DESCRIPTION
	(cd "$src" && "$winres" simply --arch amd64 --out rsrc --manifest "$1" --icon "$icon" \
		--product-name "$name" --product-version "$winversion" --file-version "$winversion" \
		--file-description "$3" --original-filename "$2" --copyright "Darkroom Labs, Apache-2.0")
}
wenv=(CGO_ENABLED=1 GOOS=windows GOARCH=amd64 CC=x86_64-w64-mingw32-gcc)
resources gui Darkroom.exe "$name"
env "${wenv[@]}" "$src/packaging/build.sh" "$win/Darkroom.exe" "${flags[@]}" -ldflags "-s -w -H=windowsgui"
resources cli darkroom-cli.exe "$name (command line)"
env "${wenv[@]}" "$src/packaging/build.sh" "$win/darkroom-cli.exe" "${flags[@]}" -ldflags "-s -w"
cat >"$win/README.txt" <<README
$name $version for Windows (64-bit)

Darkroom.exe      the desktop app: double-click it.
darkroom-cli.exe  the same program for the command line: darkroom-cli.exe help

Models run on the CPU here. For an NVIDIA GPU (CUDA), run the Linux build in WSL2.
$website
README
sed -i 's/$/\r/' "$win/README.txt"
(cd "$work/windows" && zip -qr -X "$dist/darkroom-$version-windows-amd64.zip" darkroom)

(cd dist && sha256sum -- *.tar.xz *.deb *.zip >SHA256SUMS)
echo "dist: built in $((SECONDS - start)) s:"
(cd dist && ls -l --block-size=K -- *)
