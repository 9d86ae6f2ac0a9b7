package ui

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/download"
	"github.com/darkroomlabs/darkroom/models/hw"
	"github.com/darkroomlabs/darkroom/models/store"
)

// storeCounting is a Library that counts the calls to Store that returned (a
// listing calls it last, just before it reaches the UI).
type storeCounting struct {
	Library
	calls atomic.Int32
}

func (l *storeCounting) Store() (string, int64, error) {
	defer l.calls.Add(1)
	return l.Library.Store()
}

// TestLibraryStaleListDoesNotOverwrite: two listings in flight (the Library's
// first, slow because it measures this PC, and a refresh after a model was
// added) could land out of order, and the older list then hid the new model
// until something refreshed again (CI saw it: "timed out waiting for the
// models in the Library"). A listing older than the one shown is dropped.
func TestLibraryStaleListDoesNotOverwrite(t *testing.T) {
	release := make(chan struct{})
	var probes atomic.Int32
	a, lib := libraryAppWith(t, "http://127.0.0.1:9", download.Options{}, func() hw.Info {
		if probes.Add(1) == 1 {
			<-release // the first listing read the store; it waits here
		}
		return hw.Info{RAMTotal: 64 << 30}
	})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	counting := &storeCounting{Library: a.deps.Library}
	a.deps.Library = counting
	waitFor(t, "the first listing to read the store", func() bool { return probes.Load() >= 1 })

	st := lib.m.Store()
	m := &store.Manifest{Name: "acme/one", Repo: "acme/one", Source: "hub", State: store.StateComplete,
		Files: []store.File{{Name: "model.safetensors", Size: 1 << 20, State: store.FileComplete}}}
	if err := st.Save(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(st.Root, "acme--one", "model.safetensors"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	asUI(a.Library.Refresh)
	waitFor(t, "the new model in the Library", func() bool { return libraryCardOf(a.Library, "acme/one") != nil })

	close(release) // the first listing, without acme/one, lands now
	waitFor(t, "the first listing to finish", func() bool { return counting.calls.Load() >= 1 })
	time.Sleep(200 * time.Millisecond) // its callback runs right after Store
	if libraryCardOf(a.Library, "acme/one") == nil {
		t.Fatal("an older listing replaced a newer one: acme/one is gone from the Library")
	}
	if libraryCardOf(a.Library, catalog.MiniID) == nil {
		t.Fatal("the catalog is gone from the Library")
	}
}
