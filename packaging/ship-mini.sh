#!/usr/bin/env bash
# Ships a training run as the built-in Darkroom Mini, in the repository this
# script belongs to:
#   1. exports the run's latest checkpoint (`darkroom train export`) to a temporary
#      folder and refuses it over the repository's size limit;
#   2. measures it with `darkroom bench` on the CPU (steps and AR guidance rounds
#      per canvas, canvas time against the 1.5 s budget);
#   3. writes its card (assets/mini/card.json: training sources and licence line
#      from the run's corpus, typical steps from the bench, the chat mode kept
#      from the shipped card) and its leads
#      (assets/mini/leads.jsonl.gz: every entry of the run's corpus as its page,
#      cut to fit a canvas, which the Encyclopedia holds after a known title's
#      heading and Chat answers with);
#   4. replaces assets/mini's model files (README.md and GFDL-1.3.txt stay) and assets/training's
#      recipe.json, loss.png and metrics.jsonl, rebuilds darkroom and checks that the
#      new built-in model writes a page — putting the old files back if it does not;
#   5. prints what changed: the catalog entry (format, dtype, parameters, size,
#      licence, steps), the card, the canvas time, the files, and what is left to do
#      by hand.
# Everything else the app and the CLI say about the Mini (format, parameters, size,
# profile, sources) is read from those files (models/catalog.BuiltinFacts,
# assets.MiniCard): there is no code to edit and no checksum to update.
#
#   packaging/ship-mini.sh RUN_DIR [--dtype f32|bf16] [--runs N] [--max-mb MB]
#
# --dtype: the exported weights (default f32); --runs: timed bench runs (default 3);
# --max-mb: the most the model may add to the repository (default 60).
# packaging/ship-mini-test.sh runs it on a copy of the repository.
set -euo pipefail

die() {
	echo "ship-mini: $*" >&2
	exit 1
}

run="" dtype=f32 runs=3 max_mb=60
while [ $# -gt 0 ]; do
	case "$1" in
	--dtype) dtype="${2:?--dtype needs f32 or bf16}"; shift 2 ;;
	--runs) runs="${2:?--runs needs a number}"; shift 2 ;;
	--max-mb) max_mb="${2:?--max-mb needs a number}"; shift 2 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) die "unknown flag $1 (see --help)" ;;
	*) [ -z "$run" ] || die "one RUN_DIR, please (got $run and $1)"; run="$1"; shift ;;
	esac
done
[ -n "$run" ] || die "usage: packaging/ship-mini.sh RUN_DIR [--dtype f32|bf16] [--runs N] [--max-mb MB]"
case "$dtype" in f32 | bf16) ;; *) die "--dtype is $dtype; want f32 or bf16" ;; esac
given="$run"
run="$(cd "$run" 2>/dev/null && pwd)" || die "no run directory $given"
if [ ! -f "$run/recipe.json" ] || [ ! -d "$run/checkpoints" ]; then
	die "$given is not a \`darkroom train run\` directory (no recipe.json or checkpoints/)"
fi

cd "$(dirname "$0")/.."
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then export PATH="/usr/local/go/bin:$PATH"; fi
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
for tool in go jq; do
	command -v "$tool" >/dev/null 2>&1 || die "needs $tool (packaging/setup.sh installs Go; apt-get install jq)"
done
mini=assets/mini training=assets/training
work="$(mktemp -d /tmp/darkroom-ship-mini.XXXXXX)"
trap 'rm -rf "$work"' EXIT

mini_entry() { "$1" models --json --models-dir "$work/models" | jq -c '.models[] | select(.id == "darkroom-mini")'; }

echo "ship-mini: building darkroom"
go build -o "$work/before" .
before="$(mini_entry "$work/before")"

echo "ship-mini: exporting the latest checkpoint of $run ($dtype)"
"$work/before" train export --run "$run" --out "$work/mini" --recipe "$work/training" --dtype "$dtype"
# The recipe's commands name where they wrote: this script's scratch folder and
# the run's absolute path. Say them as a reader of assets/training can rerun them.
jq --arg m "$work/mini" --arg t "$work/training" --arg r "$run" --arg given "$given" \
	'.commands |= map(split($m) | join("assets/mini") | split($t) | join("assets/training") | split($r) | join($given))' \
	"$work/training/recipe.json" >"$work/recipe.json" && mv "$work/recipe.json" "$work/training/recipe.json"
# The shipped recipe's commands are the Mini's whole lineage (runs started from
# earlier weights, distilled corpora, settings chosen by hand); the run's own
# follow them, those not already there, so that shipping never loses how the
# weights it started from were made.
if [ -f "$training/recipe.json" ]; then
	jq --slurpfile old "$training/recipe.json" \
		'.commands = ($old[0].commands + [.commands[] | select(. as $c | $old[0].commands | index($c) | not)])' \
		"$work/training/recipe.json" >"$work/recipe.json" && mv "$work/recipe.json" "$work/training/recipe.json"
fi
bytes="$(du -cb "$work/mini"/* | tail -n 1 | cut -f1)"
if [ "$bytes" -gt $((max_mb * 1000 * 1000)) ]; then
	die "the exported model is $((bytes / 1000 / 1000)) MB, over the $max_mb MB the repository allows (try --dtype bf16)"
fi

echo "ship-mini: measuring it on the CPU (darkroom bench --runs $runs)"
"$work/before" bench --model "$work/mini" --backend go --mode diffusion --runs "$runs" --json >"$work/bench.json"
steps="$(jq '.diffusion.steps_per_canvas' "$work/bench.json")"
rounds="$(jq '.diffusion.guidance_rounds_per_canvas // 0' "$work/bench.json")"
canvas_ms="$(jq '.diffusion.median_canvas_ms' "$work/bench.json")"
jq -e '.diffusion.steps_per_canvas > 0' "$work/bench.json" >/dev/null || die "the bench wrote no canvas ($work/bench.json)"

# The card's sources: the corpus's own list (stats.json's sources; a corpus built
# before they were recorded lists its dictionaries), named as the app says them.
corpus="$(jq -r '.corpus // empty' "$run/recipe.json")"
[ -f "$corpus/stats.json" ] || die "the run's corpus $corpus has no stats.json: the card's sources come from it"
names=() licences=()
while read -r src; do
	case "$src" in
	foldoc) names+=("FOLDOC") licences+=("FOLDOC (GFDL-1.1+)") ;;
	jargon) names+=("the Jargon File") licences+=("the Jargon File (public domain)") ;;
	wordnet) names+=("WordNet") licences+=("WordNet (WordNet 3.0 licence)") ;;
	vera) names+=("V.E.R.A.") licences+=("V.E.R.A. (GFDL-1.1+)") ;;
	python) names+=("the Python documentation") licences+=("the Python documentation (PSF licence)") ;;
	debian) ;; # package metadata for the Desktop demo's screens, not a text the Mini knows
	*) die "the corpus has a source \"$src\" this script cannot name: add it to ship-mini.sh's list (and assets/training/SOURCES.md)" ;;
	esac
done < <(jq -r '(.sources // .dictionaries // [])[].name' "$corpus/stats.json")
[ "${#names[@]}" -gt 0 ] || die "$corpus/stats.json lists no sources"
trained_on="${names[0]}" licence="training data: ${licences[0]}"
for ((i = 1; i < ${#names[@]}; i++)); do
	if [ "$i" = $((${#names[@]} - 1)) ]; then trained_on+=" and ${names[i]}"; else trained_on+=", ${names[i]}"; fi
	licence+=", ${licences[i]}"
done
licence+="; weights Apache-2.0"
# The chat mode (and the reason the app gives for it) is the shipped card's: a
# choice measured on the eval's chats, kept until a new eval says otherwise.
old_card='{}'
if [ -f "$mini/card.json" ]; then old_card="$(cat "$mini/card.json")"; fi
jq -n --arg on "$trained_on" --arg lic "$licence" --argjson steps "$steps" --argjson rounds "$rounds" --argjson old "$old_card" \
	'{trained_on: $on, license: $lic, typical_steps: ($steps * 10 | round / 10), typical_guidance_rounds: ($rounds * 10 | round / 10)}
	+ ($old | {chat_mode, chat_mode_why} | with_entries(select(.value != null)))' \
	>"$work/mini/card.json"
chat_mode="$(jq -r '.chat_mode // "diffusion (none named)"' "$work/mini/card.json")"

# The entries, which the Encyclopedia holds after a known title's heading and
# Chat answers with (assets.Leads): from the corpus the run trained on, so never
# a held-out title's.
"$work/before" train leads --corpus "$corpus" --model "$work/mini" >"$work/leads.out" 2>&1 ||
	die "train leads: $(tail -n 1 "$work/leads.out")"
bytes="$(du -cb "$work/mini"/* | tail -n 1 | cut -f1)"
if [ "$bytes" -gt $((max_mb * 1000 * 1000)) ]; then
	die "the exported model and its leads are $((bytes / 1000 / 1000)) MB, over the $max_mb MB the repository allows (try --dtype bf16)"
fi

echo "ship-mini: installing it into $mini and $training"
mkdir -p "$work/old/mini" "$work/old/training"
cp -p "$mini"/* "$work/old/mini/"
for f in recipe.json loss.png metrics.jsonl; do
	if [ -f "$training/$f" ]; then cp -p "$training/$f" "$work/old/training/"; fi
done
restore() {
	find "$mini" -mindepth 1 -maxdepth 1 ! -name README.md ! -name GFDL-1.3.txt -delete
	cp -p "$work/old/mini"/* "$mini/"
	cp -p "$work/old/training"/* "$training/" 2>/dev/null || true
}
find "$mini" -mindepth 1 -maxdepth 1 ! -name README.md ! -name GFDL-1.3.txt -delete # an old index or shards must not linger
cp "$work/mini"/* "$mini/"
mkdir -p "$training"
cp "$work/training/recipe.json" "$work/training/loss.png" "$work/training/metrics.jsonl" "$training/"

echo "ship-mini: rebuilding darkroom with the new built-in model"
if ! go build -o "$work/after" . ||
	! "$work/after" wiki --backend go --max-new-tokens 32 --json Unix >"$work/page.json" 2>"$work/page.err" ||
	! jq -e '.html | length > 0' "$work/page.json" >/dev/null; then
	cat "$work/page.err" >&2 2>/dev/null || true
	restore
	die "the new built-in model did not build or write a page; the old files are back"
fi
after="$(mini_entry "$work/after")"

echo
echo "Darkroom Mini: what changed"
for k in format download_size license typical_steps typical_guidance_rounds profiles; do
	a="$(jq -c ".$k" <<<"$before")" b="$(jq -c ".$k" <<<"$after")"
	if [ "$a" = "$b" ]; then
		printf '  %-24s %s (unchanged)\n' "$k" "$a"
	else
		printf '  %-24s %s\n  %-24s → %s\n' "$k" "$a" "" "$b"
	fi
done
old_on="$(jq -r '.trained_on // "?"' "$work/old/mini/card.json" 2>/dev/null || echo "? (no card)")"
if [ "$old_on" = "$trained_on" ]; then
	printf '  %-24s %s (unchanged)\n' "trained on" "$trained_on"
else
	printf '  %-24s %s\n  %-24s → %s\n' "trained on" "$old_on" "" "$trained_on"
fi
# generation_config.json: the sampler defaults the app starts from, key by key.
jq -rn --slurpfile a "$work/old/mini/generation_config.json" --slurpfile b "$mini/generation_config.json" '
	[($a[0] // {}) , $b[0]] as [$x, $y] | ($x + $y) | keys[] as $k
	| select($x[$k] != $y[$k]) | "  generation_config \($k): \($x[$k] | tojson) → \($y[$k] | tojson)"' 2>/dev/null || true
canvas_s="$(jq -n --argjson ms "$canvas_ms" '$ms / 1000 * 100 | round / 100')"
if jq -e -n --argjson ms "$canvas_ms" '$ms > 1500' >/dev/null; then
	printf '  %-24s %s s median — OVER the 1.5 s budget\n' "canvas (CPU, this PC)" "$canvas_s"
else
	printf '  %-24s %s s median (budget 1.5 s)\n' "canvas (CPU, this PC)" "$canvas_s"
fi
echo "  files:"
git status --short -- "$mini" "$training" | sed 's/^/    /'
cat <<EOF

Left to do by hand:
  - score it: darkroom train eval --model $mini --corpus $corpus --chats 40 --json > $training/eval.json
  - its chat mode, kept from the old card: $chat_mode. Check it against the eval's chats in both modes, and
    set "chat_mode" ("ar" or "diffusion") and "chat_mode_why" (the reason the app shows) in $mini/card.json
    where they say otherwise (the eval.json there is the old model's)
  - the prose: README.md's honest note and $training/README.md (size, sources, what it can do)
EOF
if [ -f "$training/metrics-gpu.jsonl" ]; then
	echo "  - $training/metrics-gpu.jsonl is the old model's GPU phase: remove it, or say in the README whose it is"
fi
cat <<EOF
  - commit: git add $mini $training && git commit -m "..." -- $mini $training
EOF
