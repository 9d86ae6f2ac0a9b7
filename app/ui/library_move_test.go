package ui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/ui/settings"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/download"
	"github.com/darkroomlabs/darkroom/models/hw"
	"github.com/darkroomlabs/darkroom/models/store"
)

// movedModels are the models moveApp puts in the store: folder and size.
var movedModels = map[string]int64{"acme--one": 3 << 20, "acme--two": 2 << 20}

// moveApp opens the Library over a store holding movedModels, with an empty
// folder "usb" beside the models folder. The store's disk is a fake: a move
// copies (as to another disk) and every folder has *free bytes free.
func moveApp(t *testing.T) (a *App, lib *managerLibrary, from, usb string, free *atomic.Int64) {
	t.Helper()
	a, lib = libraryApp(t, "http://127.0.0.1:9", download.Options{}, hw.Info{RAMTotal: 64 << 30})
	l := a.Library
	waitFor(t, "the catalog", func() bool { return libraryCardOf(l, catalog.MiniID) != nil })
	st := lib.m.Store()
	from = st.Root
	for dir, size := range movedModels {
		name := strings.ReplaceAll(dir, "--", "/")
		m := &store.Manifest{Name: name, Repo: name, Source: "hub", State: store.StateComplete,
			Files: []store.File{{Name: "model.safetensors", Size: size, State: store.FileComplete}}}
		if err := st.Save(m); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(from, dir, "model.safetensors"), make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	usb = filepath.Join(filepath.Dir(from), "usb")
	if err := os.Mkdir(usb, 0o755); err != nil {
		t.Fatal(err)
	}
	free = new(atomic.Int64)
	free.Store(1 << 40)
	st.FreeSpace = func(string) (int64, error) { return free.Load(), nil }
	st.SameDisk = func(a, b string) bool { return false }
	asUI(l.Refresh)
	waitFor(t, "the models in the Library", func() bool {
		return libraryCardOf(l, "acme/one") != nil && libraryCardOf(l, "acme/two") != nil
	})
	return a, lib, from, usb, free
}

// dialogFolder is the folder named name shown in the folder dialog over w (nil
// when none is shown): a tappable item drawing that name.
func dialogFolder(w fyne.Window, name string) fyne.Tappable {
	var top fyne.CanvasObject
	asUI(func() { top = w.Canvas().Overlays().Top() })
	if top == nil {
		return nil
	}
	uiMu.Lock()
	defer uiMu.Unlock()
	for _, o := range test.LaidOutObjects(top) {
		item, ok := o.(interface {
			fyne.Widget
			fyne.Tappable
		})
		if _, button := o.(*widget.Button); !ok || button {
			continue
		}
		for _, c := range test.WidgetRenderer(item).Objects() {
			if l, ok := c.(*widget.Label); ok && l.Text == name {
				return item
			}
		}
	}
	return nil
}

// openMove taps Move… and checks that the folder dialog opens beside the
// models folder: it shows the models folder and the usb folder.
func openMove(t *testing.T, a *App) {
	t.Helper()
	move := onScreen(a.Library.content, func(b *widget.Button) bool { return b.Text == "Move…" })
	if move == nil {
		t.Fatal("no Move… button in the Library")
	}
	tap(move)
	if dialogFolder(a.win, "models") == nil || dialogFolder(a.win, "usb") == nil {
		t.Fatal("Move… does not open the folder dialog where the models folder is")
	}
}

// chooseFolder taps the folder named name in the folder dialog, then the
// dialog's button that chooses the folder shown.
func chooseFolder(t *testing.T, a *App, name string) {
	t.Helper()
	if name != "" {
		tap(dialogFolder(a.win, name))
	}
	choose := dialogButton(a.win, "Choose this folder")
	if choose == nil {
		t.Fatal("the folder dialog has no Choose this folder button")
	}
	tap(choose)
}

// waitDialogButton waits for a dialog with a button labelled text (it is shown
// once the move is planned, off the UI goroutine).
func waitDialogButton(t *testing.T, a *App, text string) *widget.Button {
	t.Helper()
	var b *widget.Button
	waitFor(t, "a dialog with "+text, func() bool { b = dialogButton(a.win, text); return b != nil })
	return b
}

// dialogText is the text of the dialog shown over a's window.
func dialogText(a *App) string {
	var top fyne.CanvasObject
	asUI(func() { top = a.win.Canvas().Overlays().Top() })
	if top == nil {
		return ""
	}
	return shownText(top)
}

// checkModelsIn fails unless every moved model's file is complete in dir.
func checkModelsIn(t *testing.T, dir string) {
	t.Helper()
	for name, size := range movedModels {
		if st, err := os.Stat(filepath.Join(dir, name, "model.safetensors")); err != nil || st.Size() != size {
			t.Errorf("%s is not in %s: %v", name, dir, err)
		}
	}
}

// TestLibraryMoveSaysWhatMovesAndAsks: Library → Move… opened the folder dialog
// at the home folder and moved the whole store at once. Now it opens beside the
// models folder, says what moves in numbers and asks; Cancel leaves everything
// as it was; a disk without room is refused before anything moves; a folder
// that holds other things gets the models in a new folder inside it.
func TestLibraryMoveSaysWhatMovesAndAsks(t *testing.T) {
	a, lib, from, usb, free := moveApp(t)
	l := a.Library
	modelsDir := func() string {
		var v settings.Values
		v = lib.settings.Get()
		return v.ModelsDir
	}
	nothingMoved := func(after string) {
		t.Helper()
		checkModelsIn(t, from)
		if ents, _ := os.ReadDir(usb); len(ents) != 0 || lib.m.StorePath() != from || modelsDir() != "" {
			t.Fatalf("%s: the models moved (%d entries in usb, store %s, setting %q)", after, len(ents), lib.m.StorePath(), modelsDir())
		}
	}
	const size = "5.2 MB" // 3 MiB + 2 MiB + two manifests

	// A disk without room: refused, with what is needed and what is free.
	free.Store(2_100_000)
	openMove(t, a)
	chooseFolder(t, a, "usb")
	another := waitDialogButton(t, a, "Choose another folder")
	if got := dialogText(a); !strings.Contains(got, "2.1 MB free") || !strings.Contains(got, "needs 1.1 GB") ||
		!strings.Contains(got, usb) || dialogButton(a.win, "Move 2 models ("+size+")") != nil {
		t.Errorf("a disk without room says:\n%s", got)
	}
	tap(another) // opens the folder dialog again, beside the models folder
	if dialogFolder(a.win, "usb") == nil {
		t.Fatal("Choose another folder does not open the folder dialog")
	}
	tap(dialogButton(a.win, "Cancel"))
	nothingMoved("refused for space")

	// Room enough: the numbers, then Cancel.
	free.Store(1_100_000_000_000)
	openMove(t, a)
	chooseFolder(t, a, "usb")
	move := waitDialogButton(t, a, "Move 2 models ("+size+")")
	got := dialogText(a)
	for _, want := range []string{from, usb, "1.1 TB free"} {
		if !strings.Contains(got, want) {
			t.Errorf("the confirmation does not say %q:\n%s", want, got)
		}
	}
	tap(dialogButton(a.win, "Cancel"))
	nothingMoved("Cancel")

	// The folder the dialog opens at holds the models folder and more: chosen
	// as it is, the models go to a new folder inside it, not among its things.
	openMove(t, a)
	chooseFolder(t, a, "")
	waitDialogButton(t, a, "Move 2 models ("+size+")")
	if got, want := dialogText(a), filepath.Join(filepath.Dir(from), "darkroom-models"); !strings.Contains(got, want) {
		t.Errorf("moving into the folder that holds the models folder does not say it goes to %s:\n%s", want, got)
	}
	tap(dialogButton(a.win, "Cancel"))
	nothingMoved("Cancel")

	// A model in use lets its files go before they move (modelHost.Unload: Windows
	// cannot move a file a process holds open), and loads from the new folder next.
	var closes []bool // per Close: whether the models were still in the old folder
	a.models.loader = LoaderFunc(func(context.Context) (Model, error) {
		return &fakeModel{answers: wikiAnswers, onClose: func() {
			_, err := os.Stat(filepath.Join(from, "acme--one", "model.safetensors"))
			closes = append(closes, err == nil)
		}}, nil
	})
	if _, err := a.models.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	openMove(t, a)
	chooseFolder(t, a, "usb")
	move = waitDialogButton(t, a, "Move 2 models ("+size+")")
	tap(move)
	waitFor(t, "the move", func() bool { return strings.Contains(uiRead(func() string { return l.store.Text }), usb) })
	if len(closes) != 1 || !closes[0] || a.models.Loaded() != nil {
		t.Errorf("closes %v, loaded %v: want the model in use closed once, before its files moved", closes, a.models.Loaded() != nil)
	}
	checkModelsIn(t, usb)
	if lib.m.StorePath() != usb || modelsDir() != usb {
		t.Errorf("after the move the store is %s, the setting %q", lib.m.StorePath(), modelsDir())
	}
	if got := shownText(l.content); !strings.Contains(got, "Moved 2 models ("+size+") to "+usb) {
		t.Errorf("after the move the Library says:\n%s", got)
	}
}

// TestLibraryMoveThatFailsKeepsTheModels: a move that fails half-way (the
// second model cannot be written: a folder is in the way) leaves every model
// in the models folder and says so; the first model, already copied, was
// removed from there, and the error line vanished with the next refresh.
func TestLibraryMoveThatFailsKeepsTheModels(t *testing.T) {
	a, lib, from, usb, _ := moveApp(t)
	l := a.Library
	if err := os.MkdirAll(filepath.Join(usb, "acme--two", "model.safetensors", "in-the-way"), 0o755); err != nil {
		t.Fatal(err)
	}
	openMove(t, a)
	chooseFolder(t, a, "usb")
	tap(waitDialogButton(t, a, "Move 2 models (5.2 MB)"))
	waitFor(t, "the move to stop", func() bool { return strings.Contains(shownText(l.content), "Could not move the models") })
	// The Library's refresh after the move must not hide what happened.
	asUI(l.Refresh)
	waitFor(t, "the Library's refresh", func() bool { return strings.Contains(uiRead(func() string { return l.store.Text }), "free") })
	got := shownText(l.content)
	if !strings.Contains(got, "Could not move the models") || !strings.Contains(got, "every model is still in "+from) {
		t.Errorf("after a failed move the Library says:\n%s", got)
	}
	checkModelsIn(t, from)
	if lib.m.StorePath() != from || !strings.Contains(uiRead(func() string { return l.store.Text }), from) {
		t.Errorf("after a failed move the store is %s", lib.m.StorePath())
	}
	for _, name := range []string{"acme/one", "acme/two"} {
		if c := libraryCardOf(l, name); c == nil || uiRead(func() string { return c.entry.State }) != "ready" {
			t.Errorf("after a failed move %s is not ready in the Library", name)
		}
	}
}

// TestLibraryMoveCanBeStopped: a move copying gigabytes could not be stopped
// from the app; Stop beside its progress bar ends it with every model where it
// was, says so, and moving again later carries them all.
func TestLibraryMoveCanBeStopped(t *testing.T) {
	a, lib, from, usb, _ := moveApp(t)
	l := a.Library
	held := &heldMove{managerLibrary: lib, started: make(chan struct{})}
	a.deps.Library = held
	openMove(t, a)
	chooseFolder(t, a, "usb")
	tap(waitDialogButton(t, a, "Move 2 models (5.2 MB)"))
	select {
	case <-held.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the move did not start copying")
	}
	if !uiRead(func() bool { return l.moveRow.Visible() && !l.stopMv.Disabled() }) {
		t.Fatal("no Stop beside the move's progress")
	}
	tap(l.stopMv)
	waitFor(t, "the move to stop", func() bool { return strings.Contains(shownText(l.content), "Stopped moving the models") })
	got := shownText(l.content)
	if !strings.Contains(got, "every model is still in "+from) || strings.Contains(got, "Could not") || uiRead(l.moveRow.Visible) {
		t.Errorf("after Stop the Library says:\n%s", got)
	}
	checkModelsIn(t, from)
	if lib.m.StorePath() != from || lib.settings.Get().ModelsDir != "" {
		t.Errorf("after Stop the store is %s, the setting %q", lib.m.StorePath(), lib.settings.Get().ModelsDir)
	}

	a.deps.Library = lib
	openMove(t, a)
	chooseFolder(t, a, "usb")
	tap(waitDialogButton(t, a, "Move 2 models (5.2 MB)"))
	waitFor(t, "the move", func() bool { return strings.Contains(uiRead(func() string { return l.store.Text }), usb) })
	checkModelsIn(t, usb)
}

// heldMove is the Library whose move holds at its first progress until it is
// cancelled.
type heldMove struct {
	*managerLibrary
	started chan struct{}
	once    sync.Once
}

func (h *heldMove) MoveStore(ctx context.Context, dir string, progress func(done, total int64)) error {
	return h.managerLibrary.MoveStore(ctx, dir, func(done, total int64) {
		h.once.Do(func() {
			close(h.started)
			<-ctx.Done()
		})
		progress(done, total)
	})
}
