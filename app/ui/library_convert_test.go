package ui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/ui/internal/tiny"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/train"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/download"
	"github.com/darkroomlabs/darkroom/models/hubtest"
	"github.com/darkroomlabs/darkroom/models/hw"
)

// TestLibraryDownloadsAndConvertsAProfile picks int8 on a card: the Library
// downloads the published weights from a fake Hub, converts them on this PC and
// can then make the int8 version the active model.
func TestLibraryDownloadsAndConvertsAProfile(t *testing.T) {
	a, lib := tinyHubLibrary(t)
	mgr := lib.m
	l := a.Library
	card, state := dgCard(l)
	waitFor(t, "the catalog", func() bool { return card() != nil })
	chooseAndTap(t, l, "int8", "Download")
	waitFor(t, "the conversion", func() bool { return state() == "converting" || state() == "ready" })
	waitFor(t, "the converted model", func() bool {
		es, _ := mgr.Entries()
		for _, e := range es {
			if e.ID == catalog.DiffusionGemmaID && len(e.Derived) == 1 && e.Derived[0].Profile == "int8" {
				return state() == "ready"
			}
		}
		return false
	})
	if e := shownText(l.errs); e != "" {
		t.Fatalf("library error: %s", e)
	}
	if p := shownText(card().probBox); p != "" {
		t.Fatalf("card error: %s", p)
	}
	chooseAndTap(t, l, "int8", "Use")
	waitFor(t, "the int8 model to be active", func() bool {
		active, _ := mgr.Active()
		return active != "" && active != catalog.DiffusionGemmaID
	})
	// Use ends by telling every screen (after it saved the settings): wait for
	// that, or the test's folder is removed while the settings are written.
	waitFor(t, "the screens to name the new model", func() bool {
		return strings.HasPrefix(uiRead(func() string { return a.notices[0].Text }), "Active model:")
	})
	if src, err := mgr.Source(must(mgr.Active())); err != nil || src.Dir == "" {
		t.Errorf("active model does not resolve: %v", err)
	}
}

// TestLibraryDownloadKeepsRoomForTheConversion: a profile made on this PC is refused
// before its download starts where the models folder has room for the download but
// not for what the conversion then writes (the 26B's int8: 28 GB), the card saying
// so; the published profile, which needs no conversion, downloads on the same disk.
// The download ran, and the conversion failed on the full disk after it.
func TestLibraryDownloadKeepsRoomForTheConversion(t *testing.T) {
	a, lib := tinyHubLibrary(t)
	lib.m.Store().FreeSpace = func(string) (int64, error) { return 20e9, nil }
	l := a.Library
	card, state := dgCard(l)
	waitFor(t, "the catalog", func() bool { return card() != nil })
	chooseAndTap(t, l, "int8", "Download")
	waitFor(t, "the refusal on the card", func() bool { return shownText(card().probBox) != "" })
	if p := shownText(card().probBox); !strings.Contains(p, "Not enough free disk space") || !strings.Contains(p, "more for what is made from it") {
		t.Errorf("the card says %q", p)
	}
	if es, _ := lib.m.Entries(); len(es) > 0 {
		for _, e := range es {
			if e.ID == catalog.DiffusionGemmaID && e.Progress != nil && e.Progress.Done > 0 {
				t.Errorf("%d bytes downloaded before the refusal", e.Progress.Done)
			}
		}
	}
	chooseAndTap(t, l, "bf16", "Download")
	// This timed out in two full runs of the suite: the card showed the
	// refusal from the download job's own failure event, before the manager
	// had let the transfer go, and a Pull in that moment was handed the
	// failing transfer (models' TestPullAgainOnTheFailure). Where it is not
	// ready, the failure says what the card shows.
	describe := func() string {
		c := card()
		return fmt.Sprintf("state %q, profile %q, card problem %q, library error %q, buttons %q", state(),
			uiRead(func() string { return c.profile.Selected }), shownText(c.probBox), shownText(l.errs), buttonTexts(c))
	}
	for start := time.Now(); state() != "ready"; time.Sleep(2 * time.Millisecond) {
		if time.Since(start) > 90*time.Second {
			t.Fatalf("timed out waiting for the bf16 download: %s", describe())
		}
	}
}

// buttonTexts are the texts of a card's buttons.
func buttonTexts(c *libraryCard) string {
	return uiRead(func() string {
		var have []string
		for _, o := range c.buttons.Objects {
			if b, ok := o.(*widget.Button); ok {
				have = append(have, b.Text)
			}
		}
		return strings.Join(have, ", ")
	})
}

// TestLibraryDeleteLetsTheModelInUseGo: deleting the model in use closes it first,
// while its files are still there (on Windows a file a process holds open cannot be
// deleted — a loaded GGUF's is — and a mapped file's disk space stays taken until it
// is unmapped), and the screens then load the model the Library falls back to.
func TestLibraryDeleteLetsTheModelInUseGo(t *testing.T) {
	a, lib := tinyHubLibrary(t)
	mgr := lib.m
	var closes []bool // per Close: whether the model's folder was still there
	folder := func() bool {
		m, _ := filepath.Glob(filepath.Join(mgr.StorePath(), "*", "model.safetensors"))
		return len(m) > 0
	}
	a.models.loader = LoaderFunc(func(context.Context) (Model, error) {
		return &fakeModel{answers: wikiAnswers, onClose: func() { closes = append(closes, folder()) }}, nil
	})
	l := a.Library
	card, state := dgCard(l)
	waitFor(t, "the catalog", func() bool { return card() != nil })
	chooseAndTap(t, l, "bf16", "Download")
	waitFor(t, "the download", func() bool { return state() == "ready" })
	tapButton(t, card().buttons, "Use")
	waitFor(t, "the model to be active", func() bool {
		active, _ := mgr.Active()
		c := card()
		return active != "" && c != nil && uiRead(func() bool { return c.entry.Active })
	})
	if _, err := a.models.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	closes = nil // Use's own reset closed the model loaded before
	tapButton(t, card().buttons, "Delete")
	tap(dialogButton(a.win, "Delete"))
	waitFor(t, "the model to be deleted", func() bool { return state() == "available" })
	if len(closes) != 1 || !closes[0] {
		t.Errorf("closes %v: want the model in use closed once, before its files went", closes)
	}
	if folder() {
		t.Error("the model's files are still there")
	}
	if a.models.Loaded() != nil {
		t.Error("a model is still loaded after the one in use was deleted")
	}
}

// TestLibraryConvertsAfterTheDownload: a model downloaded as published (bf16),
// with int8 picked afterwards — or a restart between a download and its
// conversion, which forgets the profile that was asked for — offers "Convert to
// int8", which makes it; the card offered Use, which failed with "has no int8
// version yet: download it with that profile", and no Download button to do so.
func TestLibraryConvertsAfterTheDownload(t *testing.T) {
	a, lib := tinyHubLibrary(t)
	l := a.Library
	card, state := dgCard(l)
	buttons := func() string {
		c := card()
		if c == nil {
			return ""
		}
		return shownText(c.buttons)
	}
	waitFor(t, "the catalog", func() bool { return card() != nil })
	chooseAndTap(t, l, "bf16", "Download")
	waitFor(t, "the download", func() bool { return state() == "ready" })

	selectProfile(card(), "int8")
	if b := buttons(); !strings.Contains(b, "Convert to int8") || strings.Contains(b, "Use") {
		t.Fatalf("bf16 downloaded, int8 picked: buttons %q; want Convert to int8, not Use", b)
	}
	tapButton(t, card().buttons, "Convert to int8")
	waitFor(t, "the int8 version", func() bool {
		es, _ := lib.m.Entries()
		for _, e := range es {
			if e.ID == catalog.DiffusionGemmaID && len(e.Derived) == 1 && e.Derived[0].Profile == "int8" {
				return true
			}
		}
		return false
	})
	// The card learns of it from the conversion's events and the listing they
	// refresh, which reach the UI goroutine a moment after the manager lists it
	// (the card could still read "ready" from before the conversion: a flaky test).
	waitFor(t, "the card to offer the int8 version", func() bool {
		selectProfile(card(), "int8")
		b := buttons()
		return state() == "ready" && strings.Contains(b, "Use") && !strings.Contains(b, "Convert")
	})
	if p := shownText(card().probBox); p != "" {
		t.Errorf("card error: %s", p)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// tinyHubLibrary is a Library app whose fake Hub serves a tiny model's files
// (HF layout, the weights as LFS) as the DiffusionGemma catalog entry's repo,
// on a PC with 64 GB of RAM.
func tinyHubLibrary(t *testing.T) (*App, *managerLibrary) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src")
	if err := tiny.Write(src); err != nil {
		t.Fatal(err)
	}
	var files []*hubtest.File
	for _, name := range []string{"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, &hubtest.File{Name: name, Data: b, LFS: name == "model.safetensors"})
	}
	h := hubtest.New()
	t.Cleanup(h.Close) // after the app's shutdown
	e, _ := catalog.Find(catalog.DiffusionGemmaID)
	h.Add(e.Repo, &hubtest.Repo{Files: files})
	return libraryApp(t, h.URL, download.Options{Interval: 20 * time.Millisecond, BackoffBase: 5 * time.Millisecond},
		hw.Info{RAMTotal: 64 << 30})
}

// chooseAndTap chooses profile on the card and taps its button text in one
// turn of the UI, on one card: the Library rebuilds its cards when it reads
// its list again (after a refused download, for one), and a choice made on the
// card before that was not the one a tap on the new card read (the bf16
// download of TestLibraryDownloadKeepsRoomForTheConversion was once never
// started: its tap downloaded the refused int8 again).
func chooseAndTap(t *testing.T, l *LibraryScreen, profile, text string) {
	t.Helper()
	found := false
	deadline := time.Now().Add(10 * time.Second) // the card rebuilds its buttons after its entry changes, as the UI gets to it
	for !found && time.Now().Before(deadline) {
		asUI(func() { // (under uiMu, as libraryCardOf reads the cards: not through it, which takes uiMu itself)
			c := l.byName[catalog.DiffusionGemmaID]
			if c == nil {
				return
			}
			c.profile.SetSelected(profile)
			for _, o := range c.buttons.Objects {
				if b, ok := o.(*widget.Button); ok && b.Text == text && !found {
					found = true
					test.Tap(b)
				}
			}
		})
		if !found {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if !found {
		t.Fatalf("no %q button on the card with %s chosen", text, profile)
	}
}

// dgCard reads the DiffusionGemma card of l as it is now (nil while the
// catalog is not listed yet) and its entry's state.
func dgCard(l *LibraryScreen) (card func() *libraryCard, state func() string) {
	card = func() *libraryCard { return libraryCardOf(l, catalog.DiffusionGemmaID) }
	state = func() string {
		if c := card(); c != nil {
			return uiRead(func() string { return c.entry.State })
		}
		return ""
	}
	return card, state
}

// TestLibraryGGUFMixEvents downloads Unsloth's Q6_K from the Library: its download's
// events reach the Q6_K's card and no other. Every GGUF entry's download had been
// named by the repo alone, and the events of any went to the last card of the repo
// (the Q8_0's); the Q4_K_M's card never showed its progress.
func TestLibraryGGUFMixEvents(t *testing.T) {
	q6, _ := catalog.Find(catalog.GGUFIDs[gguf.Q6KM])
	src := filepath.Join(t.TempDir(), "src")
	if err := tiny.Write(src); err != nil {
		t.Fatal(err)
	}
	var base []*hubtest.File
	for _, name := range []string{"config.json", "tokenizer.json"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		base = append(base, &hubtest.File{Name: name, Data: b})
	}
	h := hubtest.New()
	t.Cleanup(h.Close)
	// A GGUF of the tiny model (its header is read before the download: models' checkGGUF).
	cfg, err := config.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	gsrc := filepath.Join(t.TempDir(), "gguf")
	if _, err := train.InitCheckpoint(context.Background(), cfg, gsrc, train.InitOptions{GGUF: gguf.Q6KM, Seed: 1, Tokenizer: os.DirFS(src)}); err != nil {
		t.Fatal(err)
	}
	q6data, err := os.ReadFile(filepath.Join(gsrc, train.InitGGUFFile(gguf.Q6KM)))
	if err != nil {
		t.Fatal(err)
	}
	h.Add(q6.Repo, &hubtest.Repo{Files: []*hubtest.File{
		{Name: catalog.GGUFFile(gguf.Q4KM), Data: make([]byte, 1<<20), LFS: true},
		{Name: catalog.GGUFFile(gguf.Q6KM), Data: q6data, LFS: true}}})
	h.Add(q6.Companion.Repo, &hubtest.Repo{Files: base})
	_, lib := libraryApp(t, h.URL, download.Options{Interval: 5 * time.Millisecond}, hw.Info{RAMTotal: 64 << 30})
	var mu sync.Mutex
	names := map[string]int{}
	done := make(chan struct{})
	unsub := lib.Subscribe(func(ev DownloadEvent) {
		mu.Lock()
		defer mu.Unlock()
		names[ev.Name]++
		if ev.State == "done" && ev.Name == q6.ID {
			close(done)
		}
	})
	defer unsub()
	if err := lib.Start(q6.ID, ""); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("no done event for the Q6_K")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(names) != 1 {
		t.Errorf("the Q6_K's download sent events named %v, want its ID alone", names)
	}
}
