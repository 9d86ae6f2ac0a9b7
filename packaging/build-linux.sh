#!/usr/bin/env bash
# Builds a Linux release tarball: the darkroom binary (Darkroom Mini embedded),
# the desktop entry and the icon, with an install script for ~/.local.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x /usr/local/go/bin/go ]; then export PATH="/usr/local/go/bin:$PATH"; fi
version="$(grep -E '^\s*Version' FyneApp.toml 2>/dev/null | head -1 | sed -E 's/.*"(.*)".*/\1/')"
version="${version:-dev}"
out="out/darkroom-${version}-linux-$(go env GOARCH)"
rm -rf "$out" && mkdir -p "$out"
go build -trimpath -ldflags "-s -w" -o "$out/darkroom" .
cp packaging/linux/io.darkroomlabs.darkroom.desktop "$out/"
cp assets/icon.png "$out/io.darkroomlabs.darkroom.png"
cat > "$out/install.sh" <<'INSTALL'
#!/bin/sh
# Installs Darkroom for the current user (no root needed).
set -e
here="$(dirname "$0")"
mkdir -p "$HOME/.local/bin" "$HOME/.local/share/applications" "$HOME/.local/share/icons/hicolor/256x256/apps"
install -m 755 "$here/darkroom" "$HOME/.local/bin/darkroom"
install -m 644 "$here/io.darkroomlabs.darkroom.desktop" "$HOME/.local/share/applications/"
install -m 644 "$here/io.darkroomlabs.darkroom.png" "$HOME/.local/share/icons/hicolor/256x256/apps/"
echo "Darkroom installed: run 'darkroom' or find it in your applications menu."
INSTALL
chmod +x "$out/install.sh"
tar -C out -czf "$out.tar.gz" "$(basename "$out")"
echo "built $out.tar.gz"
