#!/usr/bin/env bash
# Tests packaging/ship-mini.sh on a copy of this repository (the real assets are
# never touched, and checked not to be): trains a tiny run on a corpus written
# here (3 steps), ships it, and checks that the copy's built-in model, card,
# catalog entry and training recipe are the run's — in f32 and in bf16 — and that
# a source the script cannot name, a model over the size limit, a folder that is
# not a run and a rebuild that fails are each refused with one plain line, leaving
# the assets as they were.
#
#   packaging/ship-mini-test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x /usr/local/go/bin/go ]; then export PATH="/usr/local/go/bin:$PATH"; fi
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"

fail() {
	echo "ship-mini-test: FAIL: $*" >&2
	exit 1
}
work="$(mktemp -d /tmp/darkroom-ship-mini-test.XXXXXX)"
trap 'rm -rf "$work"' EXIT
real_sum="$(find assets/mini assets/training -type f -print0 | sort -z | xargs -0 sha256sum)"

echo "ship-mini-test: copying the repository"
copy="$work/repo"
mkdir -p "$copy"
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - 2>/dev/null | tar -xf - -C "$copy"
[ -x "$copy/packaging/ship-mini.sh" ] || chmod +x "$copy/packaging/ship-mini.sh"
(cd "$copy" && git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm copy) # ship-mini lists files by git status
go build -o "$work/darkroom" .

echo "ship-mini-test: training a tiny run"
corpus="$work/corpus"
mkdir -p "$corpus/tokenizer"
cp assets/mini/tokenizer.json assets/mini/tokenizer_config.json "$corpus/tokenizer/"
page() { jq -nc --arg t "$1" --arg a "$2" \
	'{kind: "page", source: "foldoc", title: $t, system: "", prompt: ("Write the Darkroom encyclopedia page for: " + $t), answer: $a}'; }
{
	page Unix '<h1>Unix</h1>
<p>Unix is an <a href="/wiki/operating_system">operating system</a>.</p>'
	page kernel '<h1>kernel</h1>
<p>The kernel is the core of an operating system.</p>'
	page byte '<h1>byte</h1>
<p>A byte is eight bits.</p>'
} >"$corpus/train.jsonl"
page bit '<h1>bit</h1>
<p>A bit is a binary digit.</p>' >"$corpus/heldout.jsonl"
echo '{"sources": [{"name": "foldoc"}, {"name": "jargon"}, {"name": "debian"}]}' >"$corpus/stats.json"
"$work/darkroom" train run --corpus "$corpus" --run "$work/run" --steps 3 --batch 2 --hidden 32 --layers 2 \
	--intermediate 32 --moe-intermediate 16 --experts 4 --heads 2 --head-dim 16 --checkpoint-every 1 \
	--eval-every 100 --buckets 32,64 --warmup 1 >"$work/train.log" 2>&1 || fail "train run: $(tail -n 3 "$work/train.log")"

sum_copy() { (cd "$copy" && find assets/mini assets/training -type f -print0 | sort -z | xargs -0 sha256sum); }
refused() { # refused WANT ARGS...: ship-mini exits 1 with one line containing WANT and leaves the assets as they were
	local want="$1" before
	shift
	before="$(sum_copy)"
	if bash "$copy/packaging/ship-mini.sh" "$@" >"$work/out" 2>"$work/err"; then
		fail "ship-mini $* succeeded; want it refused with \"$want\""
	fi
	grep -q "ship-mini: .*$want" "$work/err" || fail "ship-mini $*: stderr lacks \"$want\":
$(cat "$work/err")"
	[ "$(grep -c '^ship-mini: ' "$work/err")" = 1 ] || fail "ship-mini $*: more than one error line: $(cat "$work/err")"
	[ "$(sum_copy)" = "$before" ] || fail "ship-mini $* changed the assets though it refused"
}

echo "ship-mini-test: refusals"
refused "is not a \`darkroom train run\` directory" "$corpus"
refused "no run directory" "$work/nothing"
refused "over the 0 MB" "$work/run" --runs 1 --max-mb 0
cp "$corpus/stats.json" "$work/stats.json"
echo '{"sources": [{"name": "foldoc"}, {"name": "gcide"}]}' >"$corpus/stats.json"
refused 'a source "gcide" this script cannot name' "$work/run" --runs 1
cp "$work/stats.json" "$corpus/stats.json"
# A rebuild with the new model that fails (here: go build, the second time) puts
# the old model back.
shim="$work/shim"
mkdir -p "$shim"
cat >"$shim/go" <<EOF
#!/usr/bin/env bash
if [ "\$1" = build ] && [ -f "$shim/built" ]; then echo "go: injected build failure" >&2; exit 1; fi
if [ "\$1" = build ]; then touch "$shim/built"; fi
exec "$(command -v go)" "\$@"
EOF
chmod +x "$shim/go"
(
	export PATH="$shim:$PATH"
	refused "the old files are back" "$work/run" --runs 1
)
[ -f "$shim/built" ] || fail "the injected build failure was never reached"

echo "ship-mini-test: shipping the run (f32)"
bash "$copy/packaging/ship-mini.sh" "$work/run" --runs 1 >"$work/out" 2>"$work/err" ||
	fail "ship-mini: $(tail -n 5 "$work/err")"
cat "$work/out"
(cd "$copy" && go build -o "$work/shipped" .)
entry="$("$work/shipped" models --json --models-dir "$work/models" | jq -c '.models[] | select(.id == "darkroom-mini")')"
size="$(find "$copy/assets/mini" -type f ! -name README.md -printf '%s\n' | awk '{n += $1} END {print n}')"
jq -e '.format | test("^safetensors F32, 0\\.[0-9] M parameters \\(built in\\)$")' <<<"$entry" >/dev/null ||
	fail "the shipped catalog entry's format: $entry"
jq -e --argjson size "$size" '.download_size == $size and .profiles == ["bf16"] and
	.license == "training data: FOLDOC (GFDL-1.1+), the Jargon File (public domain); weights Apache-2.0" and
	.typical_steps > 0' <<<"$entry" >/dev/null || fail "the shipped catalog entry (size $size): $entry"
jq -e '.text_config.hidden_size == 32 and .text_config.num_hidden_layers == 2' "$copy/assets/mini/config.json" >/dev/null ||
	fail "assets/mini/config.json is not the run's"
jq -e --slurpfile old assets/mini/card.json '.trained_on == "FOLDOC and the Jargon File" and
	.chat_mode == $old[0].chat_mode and .chat_mode_why == $old[0].chat_mode_why' "$copy/assets/mini/card.json" >/dev/null ||
	fail "card.json (its chat mode must be the shipped card's): $(cat "$copy/assets/mini/card.json")"
[ -f "$copy/assets/mini/README.md" ] || fail "assets/mini/README.md was removed"
[ -f "$copy/assets/mini/GFDL-1.3.txt" ] || fail "assets/mini/GFDL-1.3.txt (the licence the entries are shipped under) was removed"
[ "$(gzip -dc "$copy/assets/mini/leads.jsonl.gz" | jq -r .title | LC_ALL=C sort | tr '\n' ' ')" = "Unix byte kernel " ] ||
	fail "assets/mini/leads.jsonl.gz does not hold the corpus's three titles (the held-out bit never): $(gzip -dc "$copy/assets/mini/leads.jsonl.gz")"
jq -e '.steps_done == 3' "$copy/assets/training/recipe.json" >/dev/null || fail "assets/training/recipe.json is not the run's"
jq -e --slurpfile old assets/training/recipe.json '.commands[:($old[0].commands | length)] == $old[0].commands' \
	"$copy/assets/training/recipe.json" >/dev/null || fail "assets/training/recipe.json lost the shipped lineage: $(jq -c '.commands[:3]' "$copy/assets/training/recipe.json")"
if jq -r '.commands[]' "$copy/assets/training/recipe.json" | grep -q "/tmp/darkroom-ship-mini\\."; then
	fail "assets/training/recipe.json's commands name the script's scratch folder: $(jq -c .commands "$copy/assets/training/recipe.json")"
fi
jq -e --arg run "$work/run" '.commands | any(. == "darkroom train export --run \($run) --out assets/mini --recipe assets/training")' \
	"$copy/assets/training/recipe.json" >/dev/null || fail "the recipe's export command: $(jq -c .commands "$copy/assets/training/recipe.json")"
grep -q '→ "safetensors F32, 0\.' "$work/out" || fail "the report does not show the new format"
grep -q 'canvas (CPU, this PC)' "$work/out" || fail "the report does not give the canvas time"
(cd "$copy" && go test -count=1 ./models/catalog ./assets >"$work/gotest" 2>&1) || fail "catalog and assets tests on the shipped model: $(cat "$work/gotest")"

echo "ship-mini-test: shipping it again as bf16"
bash "$copy/packaging/ship-mini.sh" "$work/run" --runs 1 --dtype bf16 >"$work/out" 2>"$work/err" ||
	fail "ship-mini --dtype bf16: $(tail -n 5 "$work/err")"
grep -q '→ "safetensors BF16, 0\.' "$work/out" || fail "bf16: the report does not show the new format: $(cat "$work/out")"

[ "$(find assets/mini assets/training -type f -print0 | sort -z | xargs -0 sha256sum)" = "$real_sum" ] ||
	fail "the real assets changed"
echo "ship-mini-test: ok"
