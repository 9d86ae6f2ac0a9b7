package hub

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/models/hubtest"
)

func TestRevisionAndErrors(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	files := []*hubtest.File{{Name: "config.json", Data: []byte("{}")}, {Name: "sub/model.safetensors", Data: make([]byte, 1000), LFS: true}}
	h.Add("acme/m", &hubtest.Repo{Files: files, Token: "tok"})

	c := New(h.URL, "")
	if _, err := c.Revision(context.Background(), "acme/m", ""); !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "restricted") {
		t.Errorf("no token: %v", err)
	}
	c.Token = "tok"
	rev, err := c.Revision(context.Background(), "acme/m", "main")
	if err != nil {
		t.Fatal(err)
	}
	if rev.Commit == "" || len(rev.Files) != 2 {
		t.Fatalf("revision %+v", rev)
	}
	if f := rev.Files[1]; f.SHA256 != files[1].SHA256() || f.Size != 1000 || f.GitOID != "" {
		t.Errorf("LFS file %+v", f)
	}
	if f := rev.Files[0]; f.SHA256 != "" || f.GitOID != files[0].GitOID() || f.Size != 2 {
		t.Errorf("git file %+v", f)
	}
	if _, err := c.Revision(context.Background(), "acme/none", "main"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing repo: %v", err)
	}
	if _, err := c.Revision(context.Background(), "not-a-repo", "main"); err == nil {
		t.Errorf("bad repo name accepted")
	}
	if u := c.ResolveURL("acme/m", "abc", "sub/a b.json"); u != h.URL+"/acme/m/resolve/abc/sub/a%20b.json" {
		t.Errorf("resolve URL %s", u)
	}
}

// TestUnreachable tells a hub that was never reached (a closed port, a name that
// does not resolve) from one that answered, even with an error.
func TestUnreachable(t *testing.T) {
	h := hubtest.New()
	h.Add("acme/m", &hubtest.Repo{Files: []*hubtest.File{{Name: "config.json", Data: []byte("{}")}}, Token: "tok"})
	up := New(h.URL, "")
	_, refused := up.Revision(context.Background(), "acme/m", "")
	if !errors.Is(refused, ErrUnauthorized) || Unreachable(refused) {
		t.Errorf("a hub that answered 401 counted as unreachable: %v", refused)
	}
	_, missing := up.Revision(context.Background(), "acme/none", "")
	if Unreachable(missing) {
		t.Errorf("a hub that answered 404 counted as unreachable: %v", missing)
	}
	h.Close() // nothing listens on its port now
	_, closed := up.Revision(context.Background(), "acme/m", "")
	if !Unreachable(closed) {
		t.Errorf("a closed port: Unreachable false for %v", closed)
	}
	_, unknown := New("http://no-such-host.invalid", "").Revision(context.Background(), "acme/m", "")
	if !Unreachable(unknown) {
		t.Errorf("an unknown host: Unreachable false for %v", unknown)
	}
	if !Unreachable(fmt.Errorf("pull: %w", context.DeadlineExceeded)) {
		t.Errorf("a timeout: Unreachable false")
	}
	if Unreachable(errors.New("disk full")) {
		t.Errorf("an unrelated error counted as unreachable")
	}
}

func TestEnvDefaults(t *testing.T) {
	t.Setenv("HF_ENDPOINT", "https://hf-mirror.example/")
	t.Setenv("HF_TOKEN", "hf_x")
	c := New("", "")
	if c.Endpoint != "https://hf-mirror.example" || c.Token != "hf_x" {
		t.Errorf("env ignored: %+v", c)
	}
	c = New("https://flag.example", "flagtok")
	if c.Endpoint != "https://flag.example" || c.Token != "flagtok" {
		t.Errorf("flags do not override env: %+v", c)
	}
}

func TestUnsafeNames(t *testing.T) {
	for _, n := range []string{"../x", "/etc/passwd", "a/../../b", `a\b`, ""} {
		if checkFileName(n) == nil {
			t.Errorf("%q accepted", n)
		}
	}
}

// TestParseRepo: a model's repo as users give it — its name, or its page's
// address copied from a browser — reads as owner/name; what is not a model's
// says so.
func TestParseRepo(t *testing.T) {
	for in, want := range map[string]string{
		"google/diffusiongemma-26B-A4B-it":                                  "google/diffusiongemma-26B-A4B-it",
		"  acme/mini-ft \n":                                                 "acme/mini-ft",
		"https://huggingface.co/acme/mini-ft":                               "acme/mini-ft",
		"https://huggingface.co/acme/mini-ft/":                              "acme/mini-ft",
		"huggingface.co/acme/mini-ft/tree/main":                             "acme/mini-ft",
		"https://huggingface.co/acme/mini-ft/blob/main/config.json?x=1#top": "acme/mini-ft",
		"https://hf.co/acme/mini-ft":                                        "acme/mini-ft",
		"https://hf-mirror.com/acme/mini-ft/resolve/main/model.safetensors": "acme/mini-ft",
		"https://huggingface.co/models/acme/mini-ft":                        "acme/mini-ft",
		"unsloth/diffusiongemma-26B-A4B-it-GGUF:Q3_K_M":                     "unsloth/diffusiongemma-26B-A4B-it-GGUF:Q3_K_M",
		"hf.co/unsloth/diffusiongemma-26B-A4B-it-GGUF:UD-Q4_K_XL":           "unsloth/diffusiongemma-26B-A4B-it-GGUF:UD-Q4_K_XL",
	} {
		if got, err := ParseRepo(in); err != nil || got != want {
			t.Errorf("ParseRepo(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"":               "not a Hugging Face model",
		"diffusiongemma": "not a Hugging Face model",
		"a/b/c":          "not a Hugging Face model",
		"https://huggingface.co/datasets/acme/text": "is a Hugging Face dataset, not a model",
		"https://huggingface.co/spaces/acme/demo":   "is a Hugging Face space, not a model",
		"acme/../x":   "not a Hugging Face model",
		"acme/x:":     "not a Hugging Face model",
		"acme/x:Q4 K": "not a Hugging Face model",
	} {
		if got, err := ParseRepo(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRepo(%q) = %q, %v; want an error saying %q", in, got, err, want)
		}
	}
}
