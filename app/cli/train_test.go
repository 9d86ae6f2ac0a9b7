package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestTrainCommandErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"train"}, "no subcommand"},
		{[]string{"train", "bogus"}, `unknown subcommand "bogus"`},
		{[]string{"train", "run"}, "--run DIR is required"},
		{[]string{"train", "run", "--run", t.TempDir()}, "--corpus DIR is required"},
		{[]string{"train", "run", "--run", t.TempDir(), "--corpus", "x", "--kinds", "page"}, "want KIND=WEIGHT"},
		{[]string{"train", "run", "--run", t.TempDir(), "--resume"}, "--resume"},
		{[]string{"train", "export"}, "--run DIR is required"},
		{[]string{"train", "corpus"}, "--out DIR is required"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		if code := Run(c.args, &out, &errb); code != 1 {
			t.Errorf("%v: exit code %d, want 1", c.args, code)
		}
		if !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: stderr %q, want it to mention %q", c.args, errb.String(), c.want)
		}
	}
	var out, errb bytes.Buffer
	if code := Run([]string{"train", "run", "--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "-kinds") {
		t.Errorf("train run --help: code %d, output %q", code, out.String())
	}
}

func TestParseKinds(t *testing.T) {
	k, err := parseKinds("page=1, chat=0.15,desktop=0")
	if err != nil || k["page"] != 1 || k["chat"] != 0.15 || k["desktop"] != 0 {
		t.Fatalf("parseKinds = %v, %v", k, err)
	}
	for _, bad := range []string{"page", "page=x", "page=-1"} {
		if _, err := parseKinds(bad); err == nil {
			t.Errorf("parseKinds(%q): want an error", bad)
		}
	}
}
