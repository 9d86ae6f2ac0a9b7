#!/usr/bin/env bash
# Device session: everything a session that is lent the device machine (one NVIDIA H200, 15 minutes of
# device time in all) runs there, prepared and rehearsed beforehand, so that its minutes go to the GPU:
#
#   a. packaging/gpu-check.sh (Darkroom against transformers at the 26B's dimensions; capped at 8 minutes)
#   b. Darkroom Mini 2 training on the GPU: `darkroom train run` on XLA CUDA (JAX's PJRT plugin, found at
#      run time) from the starting weights prepared (the built-in Mini's by default, read from the carried
#      tree's assets/mini; else from scratch at the 6-layer Mini 2's size: hidden 192, 6 layers, 6 heads,
#      2 K/V heads, head dim 32, intermediate 384, experts 8 × 192 top-2), the host run's prefix buckets (one graph each, compiled once),
#      a checkpoint every minute, stopped by a time budget (SIGINT: the trainer writes a checkpoint), then
#      `darkroom train export` and `darkroom train eval` on the device
#
# and brings the results back under $OUT within the device tool's limits (at most 8 files of 16 MiB):
#
#   session.log                     everything both parts printed
#   gpu-check.json                  part a's table as JSON ({"skipped": …} when it could not run)
#   check.tar.gz                    part a's small logs and JSON (not the 5 GB model or the logits)
#   model.safetensors.part-NN       part b's exported weights (float32), cut in 15 MiB pieces:
#                                   cat model.safetensors.part-* > model.safetensors
#   train.tar.gz                    part b's model config and tokenizer, the run's options, recipe,
#                                   metrics and last checkpoint's state, recipe.json, loss.png, the
#                                   training, export and eval logs, eval.json
#
# Usage:
#   packaging/device-session.sh prepare [--init-run RUN | --init-model DIR | --scratch] [--corpus DIR] [--dir DIR]
#       here, where Go is: builds the headless binary (cgo, stripped, and without the Mini's files:
#       -tags nomini, so it reads them from the carried tree's assets/mini through DARKROOM_MINI_DIR and the
#       weights do not travel twice), takes the starting weights —
#       the built-in Mini (assets/mini) unless told otherwise: RUN's latest checkpoint exported
#       (reading RUN only), a model folder, or none (--scratch) —, builds train-runs/corpus with the
#       starting weights' tokenizer when it is missing (apt-get download of the Debian packages,
#       about 20 s; --corpus DIR carries another, e.g. one `darkroom train distill` wrote) and refuses a
#       corpus whose tokenizer is not theirs, runs gpu-check.sh --rehearse
#       with the binary on the CPU (assets/mini), compresses the binary and the corpus into DIR
#       (default out/device-session, ignored by git) and checks that the tree and DIR fit the 64 MiB
#       the device tool carries. On a fresh machine: bash packaging/setup.sh, then this, nothing else.
#   packaging/device-session.sh run [--part all|check|train] [--budget SECONDS] [--backend B] [--dry-run]
#       [--steps N] [--batch N] [--eval-pages N] [--eval-seen N] [--eval-seconds S] [--eval-args "FLAGS"]
#       [--dir DIR]
#       on the device (or here, to rehearse): unpacks DIR into a scratch folder, runs the parts asked for
#       within SECONDS of the start (default 585: a 600 s call), and packs $OUT. --dry-run runs
#       gpu-check.sh's dry run instead of part a (what CI tests) and trains on --backend go unless told
#       otherwise: the CPU rehearsal.
#
# docs/gpu.md ("A device session") gives the device tool's command lines.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
dir="$root/out/device-session"
die() {
	echo "device-session: $*" >&2
	exit 1
}
now() { date +%s; }

# unxz FILE: FILE decompressed on stdout, by xz or (where xz is missing) Python's lzma.
unxz() {
	if command -v xz >/dev/null 2>&1; then
		xz -dc "$1"
	else
		python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$1"
	fi
}

# --- prepare (here) -------------------------------------------------------------------------------
prepare() {
	local init_run="" init_model="$root/assets/mini" corpus="$root/train-runs/corpus"
	while [ $# -gt 0 ]; do
		case "$1" in
		--init-run) init_run="$2"; init_model=""; shift 2 ;;
		--init-model) init_model="$2"; shift 2 ;;
		--scratch) init_model=""; shift ;;
		--corpus) [ -f "$2/train.jsonl" ] || die "prepare: --corpus $2 holds no train.jsonl"; corpus="$(cd "$2" && pwd)"; shift 2 ;;
		--dir) dir="$2"; shift 2 ;;
		*) die "prepare: unknown argument $1 (see the header of $0)" ;;
		esac
	done
	command -v go >/dev/null || die "prepare needs Go (bash packaging/setup.sh installs it)"
	rm -rf "$dir"
	mkdir -p "$dir"
	local bin="$dir/darkroom"
	echo "device-session: building the headless binary"
	(cd "$root" && CGO_ENABLED=1 go build -tags headless,nomini -trimpath -ldflags "-s -w" -o "$bin" .)
	export DARKROOM_MINI_DIR="$root/assets/mini" # the built-in model of a nomini binary (assets.MiniDirEnv)
	# Where the starting weights are read here: a copy in DIR/init, or the tree's assets/mini itself,
	# which the device gets with the tree (DIR/init-tree names it).
	local init_dir="$dir/init"
	if [ -n "$init_run" ]; then
		echo "device-session: exporting $init_run's latest checkpoint as the starting weights"
		"$bin" train export --run "$init_run" --out "$dir/init" --recipe "" # reads the run, writes only dir/init
	elif [ -n "$init_model" ] && [ "$(cd "$init_model" && pwd)" = "$root/assets/mini" ]; then
		echo "device-session: starting weights from assets/mini (carried with the tree)"
		echo assets/mini >"$dir/init-tree"
		init_dir="$root/assets/mini"
	elif [ -n "$init_model" ]; then
		echo "device-session: starting weights from $init_model"
		mkdir -p "$dir/init"
		cp "$init_model"/config.json "$init_model"/generation_config.json "$init_model"/*.safetensors \
			"$init_model"/tokenizer.json "$init_model"/tokenizer_config.json "$dir/init/"
	else
		echo "device-session: no starting weights: part b trains from scratch"
	fi
	# The corpus's token ids must be the starting weights' own: build it with their tokenizer where
	# there is none, and refuse one built with another.
	if [ ! -f "$corpus/train.jsonl" ]; then
		local tokflag=()
		[ -f "$init_dir/tokenizer.json" ] && tokflag=(--tokenizer "$init_dir")
		echo "device-session: no train-runs/corpus: building it (darkroom train corpus ${tokflag[*]})"
		"$bin" train corpus --out "$corpus" "${tokflag[@]}" >"$dir/corpus.log" 2>&1 ||
			{ tail -5 "$dir/corpus.log" >&2; die "building the corpus failed (log: $dir/corpus.log)"; }
		grep '^examples:' "$dir/corpus.log" || true
		rm -f "$dir/corpus.log"
	fi
	if [ -f "$init_dir/tokenizer.json" ] && ! cmp -s "$init_dir/tokenizer.json" "$corpus/tokenizer/tokenizer.json"; then
		die "${corpus#"$root"/} was built with another tokenizer than the starting weights': move it away and prepare again (it is rebuilt with theirs), or build it with darkroom train corpus --tokenizer $init_dir"
	fi
	# The binary that goes runs gpu-check's Darkroom half here first, on the CPU over the Mini (its
	# vocabulary and canvas are the tokenizer's and the 26B's): a flag or JSON field gpu-check needs
	# that this binary lacks fails now, not on the device.
	echo "device-session: rehearsing gpu-check's Darkroom half with it (CPU, assets/mini, about a minute)"
	local reh
	reh=$(mktemp -d)
	bash "$here/gpu-check.sh" --rehearse "$root/assets/mini" --darkroom "$bin" --backend go --out "$reh" >"$reh/log" 2>&1 ||
		{ tail -20 "$reh/log" >&2; rm -rf "$reh"; die "gpu-check's rehearsal failed with this binary"; }
	grep '^|' "$reh/log"
	rm -rf "$reh"
	echo "device-session: compressing the binary and the corpus"
	xz -T2 -6 "$bin"
	tar -chf - -C "$corpus" --transform 's,^\.,corpus,' . | xz -T2 -6 >"$dir/corpus.tar.xz" # as corpus/, links followed
	git -C "$root" rev-parse HEAD >"$dir/commit" 2>/dev/null || true
	local tree carried
	tree=$(cd "$root" && { git ls-files -z; git ls-files -z -o --exclude-standard; } | xargs -0 du -cb 2>/dev/null | awk '$2 == "total" {s += $1} END {print s + 0}')
	carried=$(du -sb "$dir" | cut -f1)
	du -ab "$dir" | sort -k2
	echo "device-session: carried ${carried} B + working tree ${tree} B = $((carried + tree)) B of 67108864"
	[ $((carried + tree)) -le 67108864 ] || die "over the device tool's 64 MiB: leave out --init or shrink the tree"
	echo "device-session: prepared $dir"
}

# --- run (on the device) --------------------------------------------------------------------------
# jax_cuda_plugin: the first JAX PJRT CUDA plugin in the active virtual environment, the site-packages
# Python knows of, or /opt/*/.venv (where the device machine keeps torch and JAX).
jax_cuda_plugin() {
	local sp
	sp=$({ [ -n "${VIRTUAL_ENV:-}" ] && echo "$VIRTUAL_ENV"/lib/python3*/site-packages
		python3 -c 'import site; print(*site.getsitepackages(), site.getusersitepackages())' 2>/dev/null
		echo /opt/*/.venv/lib/python3*/site-packages; } | tr ' ' '\n')
	for d in $sp; do
		for f in "$d"/jax_plugins/xla_cuda*/xla_cuda_plugin.so; do
			[ -f "$f" ] && { echo "$f"; return 0; }
		done
	done
	return 1
}

run() {
	local part=all budget="" backend="" dry=0 steps=2000 batch=32 eval_pages=50 eval_seen=50 eval_secs=60 eval_args=""
	while [ $# -gt 0 ]; do
		case "$1" in
		--part) part="$2"; shift 2 ;;
		--budget) budget="$2"; shift 2 ;;
		--backend) backend="$2"; shift 2 ;;
		--dry-run) dry=1; shift ;;
		--steps) steps="$2"; shift 2 ;;
		--batch) batch="$2"; shift 2 ;;
		--eval-pages) eval_pages="$2"; shift 2 ;;
		--eval-seen) eval_seen="$2"; shift 2 ;;
		--eval-seconds) eval_secs="$2"; shift 2 ;;
		--eval-args) eval_args="$2"; shift 2 ;;
		--dir) dir="$2"; shift 2 ;;
		*) die "run: unknown argument $1 (see the header of $0)" ;;
		esac
	done
	case "$part" in all | check | train) ;; *) die "run: --part is all, check or train, not $part" ;; esac
	local start
	start=$(now)
	budget=${budget:-585}
	local deadline=$((start + budget))
	out="${OUT:?run: OUT must name the folder that comes back}"
	mkdir -p "$out"
	set -o pipefail
	session 2>&1 | tee -a "$out/session.log"
}

step() { echo "device-session: [$(($(now) - start))s] $*"; }

# session: run's work, its output also in $out/session.log.
session() {
	step "part $part, budget ${budget}s, commit $(cat "$dir/commit" 2>/dev/null || echo unknown)"
	[ -f "$dir/darkroom.xz" ] || die "no $dir/darkroom.xz: run $0 prepare where Go is, and carry ${dir#"$root"/}"
	work="${DEVICE_SESSION_WORK:-/tmp/darkroom-device-session}"
	rm -rf "$work"
	mkdir -p "$work"
	bin="$work/darkroom"
	unxz "$dir/darkroom.xz" >"$bin"
	export DARKROOM_MINI_DIR="$root/assets/mini" # the binary is built without the Mini's files (prepare)
	chmod +x "$bin"
	# The device's python3 is a virtual environment's (/opt/torch/.venv), on PATH but not activated: name
	# it as activating it would, so that Darkroom's auto backend finds JAX's CUDA plugin there.
	if [ -z "${VIRTUAL_ENV:-}" ]; then
		local venv
		venv=$(python3 -c 'import sys; print(sys.prefix if sys.prefix != sys.base_prefix else "")' 2>/dev/null || true)
		if [ -n "$venv" ]; then
			export VIRTUAL_ENV="$venv"
			step "VIRTUAL_ENV=$venv (python3's)"
		fi
	fi
	if [ "$part" != train ]; then
		check_part
	fi
	if [ "$part" != check ]; then
		train_part
	fi
	step "done; under $out: $(cd "$out" && ls | tr '\n' ' ')"
}

check_part() {
	step "part a: gpu-check.sh"
	"$bin" hw || true # the GPU, the plugins found and the backend auto picks
	local args=(--darkroom "$bin" --out "$work/check")
	[ "$dry" = 1 ] && args+=(--dry-run)
	[ -n "$backend" ] && args+=(--backend "$backend")
	local rc=0
	timeout -k 10 480 bash "$here/gpu-check.sh" "${args[@]}" || rc=$?
	[ "$rc" = 0 ] || step "gpu-check.sh exited $rc"
	cp "$work/check/gpu-check.json" "$out/gpu-check.json" 2>/dev/null || echo '{"failed": "gpu-check.sh wrote no gpu-check.json"}' >"$out/gpu-check.json"
	# Its logs and small JSON, not the model, the .npy or the logits files.
	(cd "$work/check" && find . -maxdepth 2 -type f -size -1024k \( -name '*.json' -o -name '*.log' -o -name '*.mem' \) -print0 |
		tar -czf "$out/check.tar.gz" --null -T -)
}

train_part() {
	step "part b: Darkroom Mini 2 training"
	if [ -z "$backend" ]; then
		if [ "$dry" = 1 ]; then
			backend=go
		else
			local plugin
			plugin=$(jax_cuda_plugin) || die "no JAX PJRT CUDA plugin (jax_plugins/xla_cuda*/xla_cuda_plugin.so) found: pass --backend xla:/path/to/xla_cuda_plugin.so"
			backend="xla:$plugin"
		fi
	fi
	step "backend $backend"
	unxz "$dir/corpus.tar.xz" | tar -xf - -C "$work"
	local run="$out/run" # checkpoints every minute land here; packed and removed at the end
	rm -rf "$run"
	local size=(--hidden 192 --layers 6 --heads 6 --kv-heads 2 --head-dim 32 --intermediate 384 --moe-intermediate 192 --experts 8 --top-k 2)
	# From scratch: the host's from-scratch schedule (2e-3 → 1e-4). From trained
	# weights: the host's fine-tunes' (5e-4 → 5e-5, warm-up 20; sessions 19–26),
	# not a from-scratch peak that would first undo what the weights hold.
	local lr=(--lr 2e-3 --min-lr 1e-4 --warmup 200) from="from scratch"
	local tune=(--lr 5e-4 --min-lr 5e-5 --warmup 20)
	if [ -f "$dir/init/config.json" ]; then
		size=(--init "$dir/init")
		lr=("${tune[@]}")
		from="from $dir/init"
	elif [ -f "$dir/init-tree" ]; then # prepare's starting weights are the tree's own (assets/mini)
		local tree_init
		tree_init=$(cat "$dir/init-tree")
		if [ -f "$root/$tree_init/config.json" ]; then
			size=(--init "$root/$tree_init")
			lr=("${tune[@]}")
			from="from $tree_init"
		fi
	fi
	# What the export, the eval and the packing need after training: kept back from the training's time.
	local reserve=$((15 + eval_secs + 15))
	local train_secs=$((deadline - $(now) - reserve))
	local least=${DEVICE_SESSION_MIN_TRAIN:-60} # seconds: less is no training (XLA compiles for about a minute)
	if [ "$train_secs" -lt "$least" ]; then
		step "skipped training: ${train_secs}s left after keeping ${reserve}s for export, eval and packing (run --part train in its own call)"
		return 0
	fi
	step "training $from for at most ${train_secs}s ($steps steps of $batch, ${lr[*]})"
	# The step lines go to train.log; every 50th comes to the session log after.
	set +e
	timeout -s INT -k 30 "$train_secs" "$bin" train run --backend "$backend" --corpus "$work/corpus" --run "$run" \
		--steps "$steps" --batch "$batch" "${lr[@]}" --buckets 48,128,256,320 \
		--kinds page=1,chat=0.15,desktop=0.1 --eval-every "$steps" --checkpoint-every 1000000 --checkpoint-minutes 1 \
		"${size[@]}" 2>&1 | tee "$work/train.log" | grep --line-buffered -v '^step '
	local rc=${PIPESTATUS[0]}
	set -e
	grep '^step ' "$work/train.log" | awk 'NR % 50 == 1' || true
	grep '^step ' "$work/train.log" | tail -1 || true
	case "$rc" in
	0) step "training finished its $steps steps" ;;
	124) step "training stopped at its time budget (SIGINT: checkpoint written)" ;;
	*) step "training exited $rc" ;;
	esac
	if [ ! -f "$run/checkpoints/latest" ]; then
		pack_train
		die "training left no checkpoint"
	fi
	step "export"
	"$bin" train export --run "$run" --out "$work/model" --recipe "$work/recipe" 2>&1 | tee "$work/export.log"
	local eval_left=$((deadline - $(now) - 15))
	eval_secs=$((eval_left < eval_secs ? eval_left : eval_secs))
	if [ "$eval_secs" -ge 1 ]; then
		step "eval: $eval_pages held-out and $eval_seen seen titles, at most ${eval_secs}s"
		rc=0
		timeout -k 10 "$eval_secs" "$bin" train eval --model "$work/model" --corpus "$work/corpus" --backend "$backend" \
			--pages "$eval_pages" --seen "$eval_seen" $eval_args --json >"$work/eval.json" 2>"$work/eval.log" || rc=$?
		tail -3 "$work/eval.log"
		[ "$rc" = 0 ] || step "eval exited $rc (124: out of time; run it on the host from the weights that come back)"
	else
		step "skipped eval: ${eval_left}s left"
	fi
	pack_train
}

# pack_train: the weights in pieces and the rest in one archive under $out; the run folder (its
# checkpoints are 100 MB and too deep to come back) removed from $out.
pack_train() {
	step "packing"
	local run="$out/run"
	if [ -f "$work/model/model.safetensors" ]; then
		split -b 15M -d -a 2 "$work/model/model.safetensors" "$out/model.safetensors.part-"
	fi
	local files=()
	for f in model/config.json model/generation_config.json model/tokenizer.json model/tokenizer_config.json \
		recipe train.log export.log eval.json eval.log; do
		[ -e "$work/$f" ] && files+=("$f")
	done
	mkdir -p "$work/run"
	for f in options.json recipe.json metrics.jsonl model checkpoints/latest; do
		[ -e "$run/$f" ] && mkdir -p "$work/run/$(dirname "$f")" && cp -r "$run/$f" "$work/run/$f"
	done
	local latest
	latest=$(cat "$run/checkpoints/latest" 2>/dev/null || true)
	[ -n "$latest" ] && [ -f "$run/checkpoints/$latest/state.json" ] && cp "$run/checkpoints/$latest/state.json" "$work/run/state.json"
	files+=(run)
	tar -czf "$out/train.tar.gz" -C "$work" "${files[@]}"
	rm -rf "$run"
}

cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
prepare) prepare "$@" ;;
run) run "$@" ;;
*) die "usage: $0 prepare|run [flags] (see the header)" ;;
esac
