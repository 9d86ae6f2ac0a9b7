#!/usr/bin/env bash
# Runs the Windows build's command line under Wine, as a Windows user's first
# commands go, in a fresh Wine prefix with an empty profile:
#   - `darkroom-cli.exe hw --json` measures this PC and must report rates a CPU can
#     have: every GEMM at most 100 TFLOP/s, memory and weight reads at most 10 TB/s,
#     the sampler at most 10^12 logits/s, decoding a token at least a nanosecond
#     (Go's time.Now on Windows moves once a timer tick, so probes timed with it
#     measured 0 and hw printed 268,435,456 GFLOP/s: engine/clock);
#   - `darkroom-cli.exe generate` on the built-in model writes its answer, and on
#     models `train init` writes from files at Darkroom Mini's size in the two forms
#     the 26B comes in from the Library's non-BF16 downloads (NVIDIA's NVFP4
#     safetensors, a GGUF in llama.cpp's Q4_K_M mix), mapped as Windows maps them;
#   - `darkroom-cli.exe serve` answers an OpenAI chat completion over HTTP;
#   - `Darkroom.exe`, the desktop app, opens its window under Xvfb (through Wine's
#     OpenGL, Mesa's) without logging a crash.
# Wine is not Windows, but the program starting, reading its embedded model,
# measuring and generating there is most of what a first run on Windows does.
# Fails with a line saying what is wrong.
#
#   packaging/wine-check.sh [ZIP]    (default: the Windows zip in dist/)
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
start=$SECONDS
fail() {
	echo "wine-check: $*" >&2
	exit 1
}
zip="${1:-$(ls dist/darkroom-*-windows-amd64.zip 2>/dev/null | head -1)}"
[ -s "$zip" ] || fail "no Windows zip (run packaging/dist.sh, or name one)"

. packaging/apt-install.sh
apt_install wine-check wine wine64 unzip gcc-mingw-w64-x86-64 jq curl xvfb xauth x11-utils x11-apps
# first PROGRAM… is the first of the programs found (on the PATH, or a path).
first() {
	local p
	for p in "$@"; do
		if command -v "$p" >/dev/null 2>&1; then
			command -v "$p"
			return
		fi
	done
}
wine="$(first wine64 /usr/lib/wine/wine64 wine)"
wineserver="$(first wineserver /usr/lib/wine/wineserver64 /usr/lib/wine/wineserver)"
[ -n "$wine" ] && [ -n "$wineserver" ] || fail "Wine is installed but its wine64 or wineserver program was not found"
# winpath PATH is PATH as the Windows program sees it: a fresh prefix maps drive Z: to /.
winpath() { local p="Z:$1"; echo "${p//\//\\}"; }

work="$(mktemp -d /tmp/darkroom-wine.XXXXXX)"
trap 'WINEPREFIX="$work/prefix" "$wineserver" -k >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
export WINEPREFIX="$work/prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
unzip -q "$zip" -d "$work"
cli="$work/darkroom/darkroom-cli.exe"
[ -s "$cli" ] || fail "$(basename "$zip") lacks darkroom/darkroom-cli.exe"
timeout 300 "$wine" wineboot --init >/dev/null 2>&1 || fail "wineboot could not make a Wine prefix"

# Go programs since Go 1.24 read random numbers through bcryptprimitives.dll's
# ProcessPrng (Windows 10 and later); Wine before 9 lacks that library, so the
# check gives this prefix a stand-in built on advapi32's RtlGenRandom. Windows has
# the real one; Wine 9 and later too.
sys32="$WINEPREFIX/drive_c/windows/system32"
if [ ! -e "$sys32/bcryptprimitives.dll" ]; then
	cat >"$work/bcp.c" <<'C'
#include <windows.h>
typedef BOOLEAN(WINAPI *genRandom)(PVOID, ULONG);
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE p, SIZE_T n) {
	static genRandom gen;
	if (!gen) gen = (genRandom)GetProcAddress(LoadLibraryA("advapi32.dll"), "SystemFunction036");
	for (; n > 0;) {
		ULONG k = n > 0x10000000 ? 0x10000000 : (ULONG)n;
		if (!gen || !gen(p, k)) return FALSE;
		p += k, n -= k;
	}
	return TRUE;
}
C
	x86_64-w64-mingw32-gcc -shared -O2 -o "$sys32/bcryptprimitives.dll" "$work/bcp.c" ||
		fail "could not build the bcryptprimitives.dll stand-in"
fi

cd "$work/darkroom"
timeout 600 "$wine" "$cli" hw --json >"$work/hw.json" 2>"$work/hw.err" ||
	fail "darkroom-cli.exe hw failed: $(tail -n 3 "$work/hw.err")"
grep -q '"rates"' "$work/hw.json" || fail "darkroom-cli.exe hw --json printed no rates: $(head -c 300 "$work/hw.json")"
# Every rate the report holds a number for, and the ones a clock too coarse for the
# probes makes impossible.
flops="$(jq -r '.rates | .. | objects | .flops? // empty' "$work/hw.json")"
[ -n "$flops" ] || fail "hw --json reported no GEMM rates"
over() { awk -v m="$2" '$1 + 0 > m + 0 { print $1; exit }' <<<"$1"; }
under() { awk -v m="$2" '$1 + 0 < m + 0 { print $1; exit }' <<<"$1"; }
[ -z "$(over "$flops" 1e14)" ] || fail "hw measured a GEMM at $(over "$flops" 1e14) FLOP/s: more than any CPU (a clock too coarse for its probes?)"
[ -z "$(under "$flops" 1e6)" ] || fail "hw measured a GEMM at $(under "$flops" 1e6) FLOP/s"
reads="$(jq -r '.rates | .mem_read, (.gemv, .gemv_stream | values[])' "$work/hw.json")"
[ -z "$(over "$reads" 1e13)" ] || fail "hw measured a read at $(over "$reads" 1e13) bytes/s: more than any CPU's memory"
v="$(jq -r '.rates.sampler' "$work/hw.json")"
[ -z "$(over "$v" 1e12)" ] || fail "hw measured the sampler at $v logits/s"
v="$(jq -r '.rates.decode_token' "$work/hw.json")"
[ -z "$(under "$v" 1e-9)" ] || fail "hw measured decoding a token at $v s: under a nanosecond"

timeout 300 "$wine" "$cli" generate --max-new-tokens 16 "What is Unix?" >"$work/generate.out" 2>"$work/generate.err" ||
	fail "darkroom-cli.exe generate failed: $(tail -n 3 "$work/generate.err")"
grep -q "[A-Za-z]" "$work/generate.out" || fail "darkroom-cli.exe generate wrote no text: $(head -c 300 "$work/generate.out")"
for profile in nvfp4 q4_k_m; do
	out="$(winpath "$work/init-$profile")"
	timeout 300 "$wine" "$cli" train init --config "$(winpath "$repo/assets/mini/config.json")" \
		--profile "$profile" --out "$out" >"$work/init.out" 2>&1 ||
		fail "darkroom-cli.exe train init --profile $profile failed: $(tail -n 3 "$work/init.out")"
	timeout 300 "$wine" "$cli" generate --model "$out" --max-new-tokens 8 "What is Unix?" >"$work/generate.out" 2>"$work/generate.err" ||
		fail "darkroom-cli.exe generate on a $profile model failed: $(tail -n 3 "$work/generate.err")"
	grep -q "8 tokens" "$work/generate.err" || fail "darkroom-cli.exe generate on a $profile model: $(tail -n 3 "$work/generate.err")"
done
# The API server: its JSON line (URLs, token) once it listens, then one chat completion.
"$wine" "$cli" serve --json --addr 127.0.0.1:0 >"$work/serve.out" 2>"$work/serve.err" &
serve=$!
for _ in $(seq 120); do
	[ -s "$work/serve.out" ] || ! kill -0 "$serve" 2>/dev/null || { sleep 0.5; continue; }
	break
done
api="$(jq -r '.api_base // empty' "$work/serve.out" 2>/dev/null | head -1)"
token="$(jq -r '.token // empty' "$work/serve.out" 2>/dev/null | head -1)"
[ -n "$api" ] && [ -n "$token" ] || fail "darkroom-cli.exe serve did not start: $(tail -n 3 "$work/serve.err")"
curl -s -m 120 "$api/chat/completions" -H "Authorization: Bearer $token" -H "Content-Type: application/json" \
	-d '{"model":"darkroom-mini","messages":[{"role":"user","content":"What is Unix?"}],"max_tokens":16}' >"$work/chat.json" ||
	fail "darkroom-cli.exe serve: the chat completion request failed: $(tail -n 3 "$work/serve.err")"
[ -n "$(jq -r '.choices[0].message.content // empty' "$work/chat.json" 2>/dev/null)" ] ||
	fail "darkroom-cli.exe serve answered no completion: $(head -c 300 "$work/chat.json")"
kill "$serve" 2>/dev/null || true

# The desktop app's window, as packaging/dist-check.sh waits for the Linux one's. The
# Wine server the commands above started has no display: it must be gone before the
# app starts one inside Xvfb's.
"$wineserver" -k >/dev/null 2>&1 || true
"$wineserver" -w >/dev/null 2>&1 || true
name="$(sed -n 's/^[[:space:]]*Name[[:space:]]*=[[:space:]]*"\(.*\)"[[:space:]]*$/\1/p' "$repo/FyneApp.toml" | head -1)"
printf '#!/bin/sh\nexec "%s" "%s"\n' "$wine" "$work/darkroom/Darkroom.exe" >"$work/app.sh"
chmod +x "$work/app.sh"
if ! timeout 150 xvfb-run -a -s "-screen 0 1280x800x24" sh "$repo/packaging/window-wait.sh" "$work/app.sh" "$work" "$name"; then
	fail "Darkroom.exe: $(cat "$work/window.err" 2>/dev/null); log: $(tail -n 5 "$work/app.log" 2>/dev/null)"
fi
geometry="$(cat "$work/geometry")"
echo "wine-check: ok ($(basename "$zip") under $("$wine" --version 2>/dev/null); GEMM up to $(sort -g <<<"$flops" | tail -1) FLOP/s; window ${geometry}; $((SECONDS - start)) s)"
