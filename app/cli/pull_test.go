package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/models/download"
	"github.com/darkroomlabs/darkroom/models/hubtest"
)

func runLibCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestPullModelsRm pulls a gated repo from a local fake Hub through the CLI
// (--endpoint, --token, --models-dir), lists it and deletes it.
func TestPullModelsRm(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	cfg, _ := config.Tiny().MarshalConfig()
	files := []*hubtest.File{{Name: "config.json", Data: cfg}, {Name: "model.safetensors", Data: bytes.Repeat([]byte("darkroom"), 40000), LFS: true}}
	h.Add("acme/tiny", &hubtest.Repo{Files: files, Token: "tok"})
	dir := t.TempDir()

	code, _, errOut := runLibCLI("pull", "acme/tiny", "--endpoint", h.URL, "--models-dir", dir)
	if code != 1 || !strings.Contains(errOut, "token") {
		t.Errorf("pull without token: code %d, stderr %q", code, errOut)
	}
	// The model's page address, as copied from a browser, is its repo.
	code, out, errOut := runLibCLI("pull", "https://huggingface.co/acme/tiny/tree/main", "--endpoint", h.URL, "--token", "tok", "--models-dir", dir, "--json")
	if code != 0 {
		t.Fatalf("pull: code %d, stderr %q", code, errOut)
	}
	var man struct {
		State string `json:"state"`
		Files []struct {
			Name, SHA256 string
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &man); err != nil || man.State != "complete" {
		t.Fatalf("pull --json: %v, %s", err, out)
	}
	got, err := download.HashFile(filepath.Join(dir, "acme--tiny", "model.safetensors"))
	if err != nil || got != files[1].SHA256() {
		t.Errorf("sha256 %s, want %s (%v)", got, files[1].SHA256(), err)
	}

	code, out, _ = runLibCLI("models", "--models-dir", dir, "--json")
	var list struct {
		Models []struct {
			ID, State string
		} `json:"models"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
		t.Fatalf("models --json: %d %s", code, out)
	}
	states := map[string]string{}
	for _, m := range list.Models {
		states[m.ID] = m.State
	}
	if states["acme/tiny"] != "complete" || states["darkroom-mini"] != "built-in" || states["diffusiongemma-26b"] != "not downloaded" {
		t.Errorf("models: %v", states)
	}
	if code, out, _ := runLibCLI("models", "--models-dir", dir); code != 0 || !strings.Contains(out, "acme/tiny") {
		t.Errorf("models table: %s", out)
	}
	if code, _, errOut := runLibCLI("rm", "acme/tiny", "--models-dir", dir); code != 0 {
		t.Errorf("rm: %s", errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "acme--tiny")); err == nil {
		t.Errorf("rm left the folder")
	}
	if code, _, errOut := runLibCLI("rm", "acme/tiny", "--models-dir", dir); code != 1 || errOut == "" {
		t.Errorf("rm of a missing model: %d", code)
	}
	if code, _, errOut := runLibCLI("pull", "acme/missing", "--endpoint", h.URL, "--models-dir", dir); code != 1 || !strings.Contains(errOut, "404") {
		t.Errorf("404: %d %q", code, errOut)
	}
}

// TestPullUnreachableHub: a hub that cannot be reached (nothing listens at the
// endpoint) is one line saying so, naming the endpoint and what to do, with the
// system's reason — not the chain of URLs it happened under.
func TestPullUnreachableHub(t *testing.T) {
	h := hubtest.New()
	endpoint := h.URL
	h.Close()
	code, _, errOut := runLibCLI("pull", "acme/tiny", "--endpoint", endpoint, "--models-dir", t.TempDir())
	want := "pull acme/tiny: cannot reach the model hub at " + endpoint + " — check the internet connection, or give a mirror with --endpoint or HF_ENDPOINT ("
	if code != 1 || !strings.Contains(errOut, want) || strings.Contains(errOut, "/api/models/") ||
		strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("code %d, stderr %q\nwant one line with %q", code, errOut, want)
	}
}

// TestPullNameNotInTheCatalog: a name that is neither a catalog name nor a repo
// ('darkroom pull diffusiongemma', the model's own name) lists the names there
// are; it said only '"diffusiongemma" is not a Hugging Face repo name (want
// owner/name)', with no word of the catalog names that pull takes too.
func TestPullNameNotInTheCatalog(t *testing.T) {
	code, _, errOut := runLibCLI("pull", "diffusiongemma", "--models-dir", t.TempDir())
	want := "darkroom pull diffusiongemma: \"diffusiongemma\" is neither a catalog name (diffusiongemma-26b, diffusiongemma-26b-nvfp4, " +
		"diffusiongemma-26b-q4km, diffusiongemma-26b-q5km, diffusiongemma-26b-q6k, diffusiongemma-26b-q8_0, diffusiongemma-26b-q3km; `darkroom models` lists them) nor a Hugging Face repo (owner/name, e.g. google/diffusiongemma-26B-A4B-it)\n"
	if code != 1 || errOut != want {
		t.Errorf("code %d, stderr %q\nwant %q", code, errOut, want)
	}
	code, _, errOut = runLibCLI("pull", "https://huggingface.co/datasets/acme/text", "--models-dir", t.TempDir())
	if want := "darkroom pull: https://huggingface.co/datasets/acme/text is a Hugging Face dataset, not a model\n"; code != 1 || errOut != want {
		t.Errorf("a dataset's address: code %d, stderr %q\nwant %q", code, errOut, want)
	}
}
