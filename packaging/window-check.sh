#!/usr/bin/env bash
# Real-window check of the desktop app: builds darkroom, starts it under Xvfb with
# fresh settings/data folders and DARKROOM_WINDOW_CHECK set, so the app opens each
# screen (first run, Encyclopedia, Desktop, Chat, Race, Library, Settings),
# generates with the built-in Darkroom Mini (or, while none is embedded, with a tiny
# random model written by app/ui/internal/tinymodel), saves PNG screenshots of the
# real window at 1280×800 (<screen>.png), then resizes it to the smallest supported
# size (app/ui's smallestWindowSize) and shoots every screen again
# (<screen>-small.png), then at the largest text size in the first window size
# (<screen>-large.png), and quits. On the way it checks defects a new user met:
# Enter sends in Chat, a download's error stays on its card (the model hub is a
# closed local port), the Race panes wrap by words. Fails on a crash, a timeout, a
# screen showing an error, a failed defect check, a window that grew past the size
# it was given (content that does not wrap), or a blank window; report.txt in the
# output folder says what was checked.
#
#   packaging/window-check.sh [OUTDIR]    (default: a temp folder)
#   DARKROOM_DOCS=1 packaging/window-check.sh   also copies the screenshots to docs/
#   DARKROOM_MODEL=DIR packaging/window-check.sh  uses the model in DIR
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x /usr/local/go/bin/go ]; then export PATH="/usr/local/go/bin:$PATH"; fi
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"

for tool in xvfb-run xwd; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		# Mesa under Xvfb cannot read OpenGL's front buffer back, so the app grabs
		# the X screen with xwd for its screenshots.
		echo "window-check: needs $tool (apt-get install xvfb xauth x11-apps)" >&2
		exit 1
	fi
done

out="${1:-$(mktemp -d /tmp/darkroom-window-check.XXXXXX)}"
mkdir -p "$out"
work="$(mktemp -d /tmp/darkroom-wc-home.XXXXXX)"
trap 'rm -rf "$work"' EXIT

echo "window-check: building"
go build -tags migrated_fynedo -o "$work/darkroom" .

model_env=()
if [ -n "${DARKROOM_MODEL:-}" ]; then
	# A model folder given by the caller (e.g. a Darkroom Mini exported from a
	# training run: name the folder darkroom-mini to have it shown as Darkroom Mini).
	echo "window-check: using the model in $DARKROOM_MODEL"
	model_env=(DARKROOM_MODEL="$DARKROOM_MODEL")
elif ! go run ./app/ui/internal/minicheck >/dev/null 2>&1; then
	echo "window-check: no Darkroom Mini embedded; using a tiny random model"
	go run ./app/ui/internal/tinymodel "$work/tiny"
	model_env=(DARKROOM_MODEL="$work/tiny")
fi

echo "window-check: running the app under Xvfb (screenshots in $out)"
set +e
env -i PATH="$PATH" HOME="$work/home" LANG=C.UTF-8 \
	XDG_CONFIG_HOME="$work/config" XDG_DATA_HOME="$work/data" XDG_CACHE_HOME="$work/cache" \
	DARKROOM_MODELS_DIR="$work/models" GOMLX_BACKEND=go HF_ENDPOINT=http://127.0.0.1:9 \
	DARKROOM_WINDOW_CHECK="$out" "${model_env[@]}" \
	timeout 900 xvfb-run -a -s "-screen 0 1280x800x24" "$work/darkroom" >"$out/app.log" 2>&1
status=$?
set -e
cat "$out/report.txt" 2>/dev/null || true
if [ "$status" != 0 ]; then
	echo "window-check: the app exited with status $status; log:" >&2
	tail -n 40 "$out/app.log" >&2
	exit 1
fi
screens="encyclopedia desktop chat race library settings"
shots="encyclopedia-start encyclopedia-developing library-gguf library-download-error settings-about chat-search"
for screen in $screens; do shots="$shots $screen $screen-small"; done
large=""
for screen in $screens; do large="$large $screen-large"; done
for shot in $shots $large; do
	if [ ! -s "$out/$shot.png" ]; then
		if [ "$shot" = encyclopedia-developing ]; then
			echo "window-check: note: no mid-development screenshot (the model finished too fast)"
			continue
		fi
		echo "window-check: missing screenshot $shot.png" >&2
		exit 1
	fi
done
if [ "${DARKROOM_DOCS:-}" = 1 ]; then
	mkdir -p docs
	for shot in $shots firstrun firstrun-small chat-large; do
		if [ -s "$out/$shot.png" ]; then cp "$out/$shot.png" "docs/$shot.png"; fi
	done
	echo "window-check: screenshots copied to docs/"
fi
echo "window-check: ok"
