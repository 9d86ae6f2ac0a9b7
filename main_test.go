package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/darkroomlabs/darkroom/app/cli"
	"github.com/darkroomlabs/darkroom/app/version"
)

// TestVersionIsFyneApps: `darkroom --version` and `darkroom version --json`
// report the version and build FyneApp.toml gives, read here independently.
func TestVersionIsFyneApps(t *testing.T) {
	var want struct {
		Details struct {
			Version string
			Build   int
		}
	}
	if _, err := toml.DecodeFile("FyneApp.toml", &want); err != nil {
		t.Fatal(err)
	}
	v, err := version.Parse(fyneApp)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		var out, errb bytes.Buffer
		if code := cli.Run(args, &out, &errb, cli.WithVersion(v)); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		line := strings.TrimSpace(out.String())
		if !strings.HasPrefix(line, "Darkroom "+want.Details.Version+" (build ") || strings.Count(line, "\n") != 0 {
			t.Errorf("%v printed %q, want one line starting Darkroom %s (build …", args, line, want.Details.Version)
		}
	}
	var out, errb bytes.Buffer
	if code := cli.Run([]string{"version", "--json"}, &out, &errb, cli.WithVersion(v)); code != 0 {
		t.Fatalf("version --json: exit %d: %s", code, errb.String())
	}
	var got version.Info
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("version --json: %v in %s", err, out.String())
	}
	if got.Version != want.Details.Version || got.Build != want.Details.Build || got.Go == "" || got.Platform == "" {
		t.Errorf("version --json = %+v, want version %s build %d", got, want.Details.Version, want.Details.Build)
	}
	out.Reset()
	cli.Run([]string{"help"}, &out, &errb, cli.WithVersion(v))
	if !strings.HasPrefix(out.String(), "Darkroom "+want.Details.Version+" runs") {
		t.Errorf("help's first line does not name the version: %q", strings.SplitN(out.String(), "\n", 2)[0])
	}
}
