package assets

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestEmbeddedMiniCard: the committed model carries a complete card.
func TestEmbeddedMiniCard(t *testing.T) {
	c, err := ReadMiniCard()
	if err != nil {
		t.Fatal(err)
	}
	if c.TrainedOn == "" || c.License == "" || c.Steps <= 0 {
		t.Errorf("card %+v", c)
	}
}

// TestMiniCardFaults: a missing, malformed or incomplete card is an error naming
// the file and what is wrong, never a zero card taken as true.
func TestMiniCardFaults(t *testing.T) {
	good := `{"trained_on":"FOLDOC","license":"GFDL","typical_steps":18,"typical_guidance_rounds":8}`
	cases := []struct{ name, card, want string }{
		{"missing", "", "has no card.json"},
		{"malformed", `{"trained_on":`, "card.json"},
		{"no sources", `{"license":"GFDL","typical_steps":18}`, "trained_on is empty"},
		{"no licence", `{"trained_on":"FOLDOC","typical_steps":18}`, "license is empty"},
		{"no steps", `{"trained_on":"FOLDOC","license":"GFDL"}`, "typical_steps 0"},
		{"bad chat mode", `{"trained_on":"FOLDOC","license":"GFDL","typical_steps":18,"chat_mode":"printer","chat_mode_why":"x"}`, `chat_mode "printer"`},
		{"chat mode without a reason", `{"trained_on":"FOLDOC","license":"GFDL","typical_steps":18,"chat_mode":"ar"}`, "without chat_mode_why"},
	}
	for _, c := range cases {
		fsys := fstest.MapFS{}
		if c.card != "" {
			fsys[MiniCardFile] = &fstest.MapFile{Data: []byte(c.card)}
		}
		_, err := readMiniCard(fsys)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one containing %q", c.name, err, c.want)
		}
	}
	got, err := readMiniCard(fstest.MapFS{MiniCardFile: &fstest.MapFile{Data: []byte(good)}})
	if err != nil || got != (MiniCard{TrainedOn: "FOLDOC", License: "GFDL", Steps: 18, GuidanceRounds: 8}) {
		t.Errorf("good card: %+v, %v", got, err)
	}
}
