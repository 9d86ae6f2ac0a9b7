package corpus

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixtureBuild builds the fixture dictionaries and packages into a new
// directory with opts' other fields, returning the directory.
func fixtureBuild(t *testing.T, opts Options) (string, *Stats) {
	t.Helper()
	dictDir := t.TempDir()
	writeFixtureDicts(t, dictDir)
	pkgs := filepath.Join(t.TempDir(), "packages")
	if err := os.WriteFile(pkgs, []byte(fixturePackages), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	opts.OutDir, opts.DictDir, opts.PackagesFile = out, dictDir, pkgs
	if opts.HeldOutFraction == 0 {
		opts.HeldOutFraction, opts.MinHeldOut = 0.2, 1
	}
	st, err := BuildStats(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return out, st
}

// A corpus built with Options.Tokenizer carries the earlier corpus's tokenizer
// byte for byte (not one trained on its own text) and measures its tokens with it.
func TestReuseTokenizer(t *testing.T) {
	first, st1 := fixtureBuild(t, Options{VocabSize: 600})
	// Shorter pages give other text, so a tokenizer trained on it would differ.
	second, st2 := fixtureBuild(t, Options{MaxPageChars: 120, MaxChatChars: 90, VocabSize: 700, Tokenizer: filepath.Join(first, "tokenizer")})
	retrained, _ := fixtureBuild(t, Options{MaxPageChars: 120, MaxChatChars: 90, VocabSize: 700})
	for _, f := range tokenizerFiles {
		a, err := os.ReadFile(filepath.Join(first, "tokenizer", f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(second, "tokenizer", f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("tokenizer/%s is not the reused one", f)
		}
	}
	a, _ := os.ReadFile(filepath.Join(first, "tokenizer", "tokenizer.json"))
	c, _ := os.ReadFile(filepath.Join(retrained, "tokenizer", "tokenizer.json"))
	if bytes.Equal(a, c) {
		t.Fatal("the fixture cannot tell a reused tokenizer from a retrained one")
	}
	if st2.VocabSize != st1.VocabSize || st2.AnswerTokens[KindPage].N == 0 {
		t.Errorf("reused tokenizer: vocab %d (want %d), page tokens %+v", st2.VocabSize, st1.VocabSize, st2.AnswerTokens[KindPage])
	}
	if st2.AnswerTokens[KindPage].Mean >= st1.AnswerTokens[KindPage].Mean {
		t.Errorf("shorter pages measured %.1f tokens, not fewer than %.1f", st2.AnswerTokens[KindPage].Mean, st1.AnswerTokens[KindPage].Mean)
	}
}

func TestReuseTokenizerRefusesDamaged(t *testing.T) {
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "tokenizer.json"), []byte(`{"model": {"type": "BPE", "vocab": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	dictDir, out := t.TempDir(), t.TempDir()
	writeFixtureDicts(t, dictDir)
	pkgs := filepath.Join(t.TempDir(), "packages")
	os.WriteFile(pkgs, []byte(fixturePackages), 0o644)
	for _, dir := range []string{bad, t.TempDir()} { // truncated JSON; no tokenizer.json at all
		err := Build(context.Background(), Options{OutDir: out, DictDir: dictDir, PackagesFile: pkgs, Tokenizer: dir})
		if err == nil || !strings.Contains(err.Error(), "tokenizer") {
			t.Errorf("Build with tokenizer %s: %v, want a tokenizer error", dir, err)
		}
		if _, err := os.Stat(filepath.Join(out, "tokenizer", "tokenizer.json")); err == nil {
			t.Errorf("a tokenizer was written from %s", dir)
		}
	}
}
