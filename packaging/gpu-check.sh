#!/usr/bin/env bash
# GPU check: DiffusionGemma at the real 26B dimensions (hidden 2816, 128 experts top-8, vocab 262,144)
# with 6 layers (5 sliding + 1 full), Darkroom against transformers on the same NVIDIA GPU and weights.
# Meant for a machine with an NVIDIA GPU, PyTorch and transformers ≥ 5 (DiffusionGemma), and a
# prebuilt headless Darkroom (the machine needs no Go). About 8 minutes:
#
#   1. transformers builds the random model and save_pretrained()s it (HF's names and shards);
#      its bf16 logits (an encoder pass over a 64-token prompt, the first decoder step over a
#      256-token canvas after it) and timings (a canvas at a fixed 16 steps; AR decoding)
#   2. Darkroom loads the folder unchanged on xla:cuda and writes its logits for the same ids
#      (`darkroom gpu logits`), then `darkroom bench` times a canvas at 16 steps and AR decoding
#   3. the same for the model quantized to int4 (`darkroom quantize --profile int4`), and a canvas of
#      the int4 model split between the GPU (its first half of the layers, the embedding, head and
#      sampler) and the CPU (the rest): `bench --gpu-layers`, what a GPU too small for the model runs
#   4. a table on stdout and OUT/gpu-check.json: logits agreement, tokens/s of both engines,
#      diffusion vs AR, device memory, and the 30-layer int4 extrapolation
#
# Where there is no GPU, torch or transformers ≥ 5 (or with --dry-run) it prints what it would
# run and exits 0 with a "skipped:" line, so CI runs this far.
#
# --rehearse MODEL runs Darkroom's half (steps 2–3 and its part of 4, the very commands above) on
# the CPU, with no GPU or torch, on MODEL in place of transformers' model: a checkpoint in the HF
# layout (`darkroom train init`, or the tests' own) whose vocabulary holds the Mini tokenizer's
# 4,096 ids. OUT/gpu-check.json then holds Darkroom's numbers only, with "rehearsal": true. CI
# runs it on a tiny model (app/cli's TestGPUCheckRehearsal), so a flag or a JSON field that
# changed fails here, not on the GPU after transformers' 4 minutes.
#
#   packaging/gpu-check.sh [--darkroom BIN] [--out DIR] [--backend SPEC] [--dry-run | --rehearse MODEL]
#
# Build BIN where Go is (cgo on: XLA's PJRT loader needs it; no desktop libraries):
#   go build -tags headless -o darkroom-headless .
# GPU support: the binary's auto backend finds the PJRT CUDA plugin (Darkroom's own, `darkroom gpu
# install`, or a JAX installation's; VIRTUAL_ENV is honoured); --backend sets it (DARKROOM_BACKEND).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${DARKROOM_BIN:-./darkroom-headless}"
out="${OUT:-/tmp/darkroom-gpu-check}"
backend="${DARKROOM_BACKEND:-auto}"
dry=0
rehearse=""
while [ $# -gt 0 ]; do
	case "$1" in
	--darkroom) bin="$2"; shift 2 ;;
	--out) out="$2"; shift 2 ;;
	--backend) backend="$2"; shift 2 ;;
	--dry-run) dry=1; shift ;;
	--rehearse) rehearse="$2"; shift 2 ;;
	*) echo "gpu-check: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
	esac
done
py="${PYTHON:-python3}"
work="$out/work"
mkdir -p "$out"
# A canvas at a fixed 16 steps: no early stop, no AR guidance rounds; a full 256-token canvas.
bench=(bench --backend "$backend" --max-steps 16 --max-new-tokens 256 --entropy-bound 0.0001 --confidence-threshold 0.0001 --guidance -1 --runs 2 --json)

plan() {
	cat <<PLAN
gpu-check: would run, in $work:
  $bin hw --json; $bin gpu verify PLUGIN     # preflight: Darkroom runs on the GPU, its CUDA plugin starts
  $py $here/gpu_check.py build $work          # random 6-layer DiffusionGemma at 26B dims, save_pretrained, HF logits + timings
  DARKROOM_XLA_PREALLOCATE=0 $bin gpu logits --backend $backend --model $work/model --ids $work/ids.json --out $work/dr
  $bin ${bench[*]} --model $work/model
  $bin quantize --model $work/model --profile int4 --out $work/model-int4
  $bin ${bench[*]} --model $work/model-int4
  $bin ${bench[*]} --mode diffusion --runs 1 --gpu-layers HALF --model $work/model-int4   # split: half the layers on the CPU
  $py $here/gpu_check.py report $work $out/gpu-check.json   # the table and the JSON
PLAN
}

skip() {
	plan
	printf '{"skipped": "%s"}\n' "$1" >"$out/gpu-check.json"
	echo "gpu-check: skipped: $1"
	exit 0
}

[ "$dry" = 1 ] && skip "dry run"
if [ -n "$rehearse" ]; then
	[ -f "$rehearse/config.json" ] || { echo "gpu-check: --rehearse $rehearse: no config.json there (a checkpoint in the HF layout)" >&2; exit 2; }
	command -v "$py" >/dev/null 2>&1 || { echo "gpu-check: --rehearse needs $py" >&2; exit 1; }
	why="rehearsal: Darkroom's half on $backend, on $rehearse instead of transformers' model"
else
	command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 || skip "no GPU/torch (no NVIDIA GPU: nvidia-smi is missing or finds none)"
	command -v "$py" >/dev/null 2>&1 || skip "no GPU/torch ($py not found)"
	why="$("$py" "$here/gpu_check.py" probe 2>&1)" || skip "no GPU/torch ($why)"
fi
[ -x "$bin" ] || { echo "gpu-check: no Darkroom binary at $bin (build it with: go build -tags headless -o darkroom-headless .)" >&2; exit 1; }
echo "gpu-check: $why"

# preflight: Darkroom must run on the GPU, or the check measures nothing. Asked first, in seconds,
# rather than after transformers' minutes: where auto would run on the CPU (no CUDA plugin found:
# `darkroom hw`'s device and summary), and whether the plugin it would use starts (`darkroom gpu
# verify`: a test graph on the GPU). Until session 28 a plugin that did not start showed only after
# transformers' build, as a CPU fallback that ran into the 180 s timeouts.
preflight() {
	local spec=$backend
	if [ "$spec" = auto ]; then
		local hw dev summary
		hw=$("$bin" hw --json 2>/dev/null) || { echo "gpu-check: \`$bin hw --json\` failed" >&2; exit 1; }
		dev=$(printf '%s' "$hw" | "$py" -c 'import json,sys; print(json.load(sys.stdin)["hardware"]["device"])')
		spec=$(printf '%s' "$hw" | "$py" -c 'import json,sys; print(json.load(sys.stdin)["hardware"]["backend"])')
		if [ "$dev" != gpu ]; then
			summary=$(printf '%s' "$hw" | "$py" -c 'import json,sys; print(json.load(sys.stdin)["hardware"]["summary"])')
			echo "gpu-check: Darkroom would run on the CPU here: $summary" >&2
			echo "gpu-check: give the CUDA plugin with --backend xla:/path/to/xla_cuda_plugin.so, or install it (\`$bin gpu install\`)" >&2
			exit 1
		fi
	fi
	case "$spec" in
	xla:/*)
		local msg
		msg=$(timeout 120 "$bin" gpu verify "${spec#xla:}" 2>&1) || {
			echo "gpu-check: the CUDA plugin ${spec#xla:} does not start: $msg" >&2
			exit 1
		}
		echo "gpu-check: preflight: $msg" ;;
	*) echo "gpu-check: preflight: Darkroom runs on $spec" ;;
	esac
}
[ -n "$rehearse" ] || preflight

start=$(date +%s)
step() { echo "gpu-check: [$(( $(date +%s) - start ))s] $*"; }
rm -rf "$work"
mkdir -p "$work"
export PYTHONUNBUFFERED=1 DARKROOM_XLA_PREALLOCATE=0

# watch_mem PID FILE: the most device memory (bytes) in use while PID runs, above what was in use
# before it started (nothing else runs on the GPU meanwhile; XLA's client grows as needed with
# DARKROOM_XLA_PREALLOCATE=0 instead of reserving most of the memory). A rehearsal has no GPU: 0.
gpu_used() {
	if [ -n "$rehearse" ]; then echo 0; else nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1; fi
}
watch_mem() {
	local pid=$1 file=$2 base peak m
	base=$(gpu_used)
	peak=$base
	while kill -0 "$pid" 2>/dev/null; do
		m=$(gpu_used)
		if [ -n "$m" ] && [ "$m" -gt "$peak" ]; then peak=$m; fi
		sleep 0.2
	done
	echo $(((peak - base) * 1024 * 1024)) >"$file"
}
# run_measured NAME CMD…: CMD's stdout in $work/NAME.json, its stderr in NAME.log, its peak device memory in NAME.mem.
run_measured() {
	local name=$1
	shift
	"$@" >"$work/$name.json" 2>"$work/$name.log" &
	local pid=$!
	watch_mem "$pid" "$work/$name.mem" &
	local watcher=$!
	local rc=0
	wait "$pid" || rc=$?
	wait "$watcher" || true
	if [ "$rc" != 0 ]; then
		echo "gpu-check: $name failed (exit $rc):" >&2
		tail -5 "$work/$name.log" >&2
		exit 1
	fi
}

if [ -n "$rehearse" ]; then
	step "rehearsal: $rehearse stands in for transformers' model; ids drawn for its vocabulary"
	cp -r "$rehearse" "$work/model"
	"$py" "$here/gpu_check.py" ids "$work"
else
	step "transformers: building, saving and timing the model"
	timeout 240 "$py" "$here/gpu_check.py" build "$work" >"$work/hf.log" 2>&1 || { tail -20 "$work/hf.log" >&2; exit 1; }
fi
cp "$here/../assets/mini/tokenizer.json" "$here/../assets/mini/tokenizer_config.json" "$work/model/" # ids are fed as ids; Darkroom needs a tokenizer file
step "Darkroom bf16: logits"
run_measured dr_logits timeout 180 "$bin" gpu logits --backend "$backend" --model "$work/model" --ids "$work/ids.json" --out "$work/dr"
step "Darkroom bf16: canvas at 16 steps, AR"
run_measured dr_bench_bf16 timeout 180 "$bin" "${bench[@]}" --model "$work/model"
step "Darkroom: quantizing to int4"
timeout 240 "$bin" quantize --model "$work/model" --profile int4 --out "$work/model-int4" >"$work/quantize.log" 2>&1 || { tail -5 "$work/quantize.log" >&2; exit 1; }
step "Darkroom int4: canvas at 16 steps, AR"
run_measured dr_bench_int4 timeout 180 "$bin" "${bench[@]}" --model "$work/model-int4"
printf '{"bf16_peak_bytes": %s, "int4_peak_bytes": %s}\n' "$(cat "$work/dr_bench_bf16.mem")" "$(cat "$work/dr_bench_int4.mem")" >"$work/dr_memory.json"
# The split (engine.Options.DeviceLayers): the first half of the layers on the GPU, the rest on this
# machine's CPU, as a PC whose GPU is too small for the model runs it. Its own failure loses its row
# only. A rehearsal on the go backend runs the GPU's half in graphs (--graph) so the split runs too.
half=$("$py" -c 'import json,sys; c=json.load(open(sys.argv[1])); print(c.get("text_config", c)["num_hidden_layers"] // 2)' "$work/model-int4/config.json")
graph=()
[ "$backend" = go ] && graph=(--graph --max-steps 2) # simplego's graphs: 2 steps take seconds, 16 half a minute
step "Darkroom int4 split: $half layers on the GPU, the rest on the CPU, a canvas"
(run_measured dr_bench_split timeout 150 "$bin" "${bench[@]}" "${graph[@]}" --mode diffusion --runs 1 --gpu-layers "$half" --model "$work/model-int4") ||
	{ echo "gpu-check: the split did not run; its row is left out" >&2; rm -f "$work/dr_bench_split.json"; }
step "report"
if [ -n "$rehearse" ]; then
	"$py" "$here/gpu_check.py" rehearsal "$work" "$out/gpu-check.json"
else
	"$py" "$here/gpu_check.py" report "$work" "$out/gpu-check.json"
fi
step "done: $out/gpu-check.json"
