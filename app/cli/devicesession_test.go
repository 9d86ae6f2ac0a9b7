package cli

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// deviceSessionStub stands in for the darkroom binary in TestDeviceSessionScript: it
// records its arguments; `train run` writes a run folder, a checkpoint, and steps
// until SIGINT, when it writes another checkpoint and exits as the real trainer
// does; `train export` writes 40 MB of weights (three pieces when packed); `train
// eval` writes a report.
const deviceSessionStub = `#!/usr/bin/env bash
echo "$*" >>"$DEVICE_SESSION_WORK/stub-args"
arg() { local want=$1; shift; while [ $# -gt 0 ]; do [ "$1" = "$want" ] && { echo "$2"; return; }; shift; done; }
case "$1 $2" in
"train run")
	run=$(arg --run "$@")
	mkdir -p "$run/model"
	echo '{}' >"$run/options.json"; echo '{}' >"$run/recipe.json"; echo '{}' >"$run/model/config.json"
	ckpt() {
		local d; d=$(printf 'ckpt-%07d' "$1"); mkdir -p "$run/checkpoints/$d"
		echo "{\"step\": $1}" >"$run/checkpoints/$d/state.json"
		head -c 1000000 /dev/zero >"$run/checkpoints/$d/vars.bin"
		echo "$d" >"$run/checkpoints/latest"
	}
	ckpt 1
	trap 'ckpt 7; echo "train run: interrupted (checkpoint saved; continue with --resume)" >&2; exit 1' INT
	i=0
	while true; do i=$((i + 1)); echo "step $i/2000  loss 1" >&2; echo "{\"step\": $i}" >>"$run/metrics.jsonl"; sleep 0.1; done ;;
"train export")
	out=$(arg --out "$@"); recipe=$(arg --recipe "$@")
	mkdir -p "$out" "$recipe"
	head -c 40000000 /dev/urandom >"$out/model.safetensors"
	echo '{}' >"$out/config.json"; echo '{}' >"$out/tokenizer.json"; echo '{}' >"$recipe/recipe.json"
	echo "exported step 7" >&2 ;;
"train eval") echo '{"pages": 1}' ;;
*) echo "stub: unexpected $*" >&2; exit 2 ;;
esac
`

// TestDeviceSessionScript runs packaging/device-session.sh's CPU rehearsal (gpu-check's
// dry run, then the training part) over a prepared folder whose binary is a stub, so
// that the script's own work is what is tested: the training is stopped by the time
// budget with SIGINT and its last checkpoint kept, exported, evaluated, and what it
// leaves in $OUT fits what the device tool brings back — at most 8 plain files of at
// most 16 MiB, no folders — with the weights in pieces that reassemble bit for bit.
func TestDeviceSessionScript(t *testing.T) {
	for _, tool := range []string{"bash", "xz", "timeout", "split"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	tmp := t.TempDir()
	prep, out, work := filepath.Join(tmp, "prep"), filepath.Join(tmp, "out"), filepath.Join(tmp, "work")
	for _, d := range []string{filepath.Join(prep, "init"), filepath.Join(tmp, "corpus")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(prep, "init", "config.json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(tmp, "corpus", "train.jsonl"), []byte("{}\n"), 0o644)
	stub := filepath.Join(tmp, "darkroom")
	os.WriteFile(stub, []byte(deviceSessionStub), 0o755)
	sh := func(cmd string) {
		if b, err := exec.Command("bash", "-c", cmd).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, b)
		}
	}
	sh("xz -c " + stub + " >" + filepath.Join(prep, "darkroom.xz"))
	sh("tar -cf - -C " + tmp + " corpus | xz >" + filepath.Join(prep, "corpus.tar.xz"))

	script := filepath.Join("..", "..", "packaging", "device-session.sh")
	cmd := exec.Command("bash", script, "run", "--dry-run", "--dir", prep, "--budget", "40", "--eval-seconds", "2")
	cmd.Env = append(os.Environ(), "OUT="+out, "DEVICE_SESSION_WORK="+work, "DEVICE_SESSION_MIN_TRAIN=3")
	log, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("device-session.sh: %v\n%s", err, log)
	}
	for _, want := range []string{"gpu-check: skipped: dry run", "backend go", "training from " + filepath.Join(prep, "init"),
		"stopped at its time budget (SIGINT: checkpoint written)", "eval: 50 held-out"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("the session's output lacks %q:\n%s", want, log)
		}
	}

	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		info, _ := e.Info()
		names = append(names, e.Name())
		if !info.Mode().IsRegular() || info.Size() > 16<<20 {
			t.Errorf("$OUT/%s: %v, %d B: the device tool brings back plain files of at most 16 MiB", e.Name(), info.Mode(), info.Size())
		}
	}
	want := []string{"check.tar.gz", "gpu-check.json", "model.safetensors.part-00", "model.safetensors.part-01",
		"model.safetensors.part-02", "session.log", "train.tar.gz"}
	if !slices.Equal(names, want) || len(names) > 8 {
		t.Errorf("$OUT holds %v, want %v (at most 8 files)", names, want)
	}
	var joined []byte
	for _, n := range names[2:5] {
		b, _ := os.ReadFile(filepath.Join(out, n))
		joined = append(joined, b...)
	}
	exported, _ := os.ReadFile(filepath.Join(work, "model", "model.safetensors"))
	if len(exported) != 40000000 || !bytes.Equal(joined, exported) {
		t.Errorf("the pieces join to %d B, not the %d B exported", len(joined), len(exported))
	}

	packed := tarFiles(t, filepath.Join(out, "train.tar.gz"))
	if got := strings.TrimSpace(packed["run/state.json"]); got != `{"step": 7}` {
		t.Errorf("packed run/state.json %q, want the checkpoint written at SIGINT", got)
	}
	for _, f := range []string{"eval.json", "train.log", "recipe/recipe.json", "model/config.json", "run/metrics.jsonl"} {
		if _, ok := packed[f]; !ok {
			t.Errorf("train.tar.gz lacks %s (has %d files)", f, len(packed))
		}
	}
	args, _ := os.ReadFile(filepath.Join(work, "stub-args"))
	for _, want := range []string{"--backend go", "--init " + filepath.Join(prep, "init"), "--buckets 48,128,256,320",
		"--checkpoint-minutes 1", "--batch 32", "--lr 5e-4 --min-lr 5e-5 --warmup 20", "train export --run " + filepath.Join(out, "run"), "train eval"} {
		if !strings.Contains(string(args), want) {
			t.Errorf("the binary was not run with %q:\n%s", want, args)
		}
	}
}

// tarFiles reads a .tar.gz's regular files by name.
func tarFiles(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			files[strings.TrimPrefix(h.Name, "./")] = string(b)
		}
	}
}
