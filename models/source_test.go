package models

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/models/catalog"
)

// TestLeads: Leads reads a model folder's leads (none where it has no
// file; the built-in Mini's from the binary) and refuses a damaged file by name,
// saying how to go on without it.
func TestLeads(t *testing.T) {
	dir := t.TempDir()
	if l, err := Leads(engine.Dir(dir)); err != nil || l != nil {
		t.Errorf("a folder without leads: %v, %v", l, err)
	}
	if err := os.WriteFile(filepath.Join(dir, assets.LeadsFile), []byte("not gzip"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Leads(engine.Dir(dir)); err == nil || !strings.Contains(err.Error(), assets.LeadsFile) || !strings.Contains(err.Error(), "remove that file") {
		t.Errorf("a damaged leads file: %v", err)
	}
	mini, err := assets.Mini()
	if err != nil {
		t.Fatal(err)
	}
	if l, err := Leads(engine.FS(mini, catalog.MiniID)); err != nil || l.Len() < 10000 {
		t.Errorf("the built-in Mini holds %d leads (%v), want its entries'", l.Len(), err)
	}
}
