package ui

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/chats"
	"github.com/darkroomlabs/darkroom/app/ui/settings"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/models"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/download"
	"github.com/darkroomlabs/darkroom/models/hub"
	"github.com/darkroomlabs/darkroom/models/hw"
)

// libraryApp opens the app on the Library with the real models manager over a
// fresh store, downloading from endpoint with dl's timings, on a PC with the
// given hardware.
func libraryApp(t *testing.T, endpoint string, dl download.Options, info hw.Info) (*App, *managerLibrary) {
	t.Helper()
	return libraryAppWith(t, endpoint, dl, func() hw.Info { return info })
}

// libraryAppWith is libraryApp with the hardware probe given (a test holds it to
// hold the Library's first list).
func libraryAppWith(t *testing.T, endpoint string, dl download.Options, hardware func() hw.Info) (*App, *managerLibrary) {
	t.Helper()
	dir := t.TempDir()
	mgr, err := models.New(models.Options{Dir: filepath.Join(dir, "models"), Endpoint: endpoint, Download: dl})
	if err != nil {
		t.Fatal(err)
	}
	mgr.Store().FreeSpace = func(string) (int64, error) { return 1 << 40, nil }
	st, _ := settings.Open(filepath.Join(dir, "settings.json"))
	st.Update(func(v *settings.Values) { v.FirstRunDone = true })
	cs, _ := chats.Open(filepath.Join(dir, "chats"))
	lib := &managerLibrary{m: mgr, settings: st, hardware: hardware}
	fa := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	a := newApp(fa, w, Deps{Settings: st, Chats: cs, Library: lib,
		Loader: LoaderFunc(func(context.Context) (Model, error) { return &fakeModel{answers: wikiAnswers}, nil })})
	asUI(func() { w.Resize(fyne.NewSize(1100, 900)) })
	t.Cleanup(a.shutdown)
	asUI(func() { a.Show("Library") })
	return a, lib
}

// libraryCardOf returns the card of a catalog entry as shown now (nil while the
// list is being built), read under uiMu: rebuilding the list writes byName.
func libraryCardOf(l *LibraryScreen, name string) (c *libraryCard) {
	fyne.DoAndWait(func() {
		uiMu.Lock()
		defer uiMu.Unlock()
		c = l.byName[name]
	})
	return c
}

// TestLibraryDownloadErrorStaysOnTheCard: offline, Download says in plain words
// that the hub cannot be reached, on the card, and the card's refresh (which
// used to hide the error within a second) keeps it until it is dismissed.
func TestLibraryDownloadErrorStaysOnTheCard(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused, as offline
	a, _ := libraryApp(t, endpoint, download.Options{}, hw.Info{RAMTotal: 64 << 30})
	l := a.Library
	waitFor(t, "the catalog", func() bool { return libraryCardOf(l, catalog.NVFP4ID) != nil })
	const offline = "Cannot reach the model hub — check the connection, or set a mirror"
	c := libraryCardOf(l, catalog.NVFP4ID)
	tapButton(t, c.buttons, "Download")
	waitFor(t, "the error on the card", func() bool {
		c := libraryCardOf(l, catalog.NVFP4ID)
		return c != nil && strings.Contains(shownText(c.card), offline)
	})
	// A refresh rebuilds the cards: the error is still there.
	before := libraryCardOf(l, catalog.NVFP4ID)
	asUI(l.Refresh)
	waitFor(t, "the list to be rebuilt", func() bool { return libraryCardOf(l, catalog.NVFP4ID) != before })
	c = libraryCardOf(l, catalog.NVFP4ID)
	if got := shownText(c.card); !strings.Contains(got, offline) || !strings.Contains(got, "connection refused") {
		t.Fatalf("after a refresh the card says:\n%s", got)
	}
	if got := shownText(l.errs); got != "" {
		t.Errorf("the error is also shown above the cards: %q", got)
	}
	tapButton(t, c.probBox.Objects[1].(*fyne.Container), "Dismiss")
	// (The card as shown now: the list may have been rebuilt since c was read — when
	// this machine's speed, measured in the background, arrives — and a dismissal
	// shows on the card shown.)
	c = libraryCardOf(l, catalog.NVFP4ID)
	if got := shownText(c.card); strings.Contains(got, offline) {
		t.Fatalf("dismissed, the card still says:\n%s", got)
	}
	before = c
	asUI(l.Refresh)
	waitFor(t, "the list to be rebuilt", func() bool { return libraryCardOf(l, catalog.NVFP4ID) != before })
	if got := shownText(libraryCardOf(l, catalog.NVFP4ID).card); strings.Contains(got, offline) {
		t.Fatalf("dismissed, the error came back:\n%s", got)
	}
}

// TestLibraryCardsSayWhatTheyDownload: the NVFP4 and GGUF exports are direct
// downloads (their size, no "made locally"), the bf16 checkpoint's int4 is made
// on this PC; the fit line names its threshold in words; the built-in Mini,
// active on a fresh install, offers no "Use".
func TestLibraryCardsSayWhatTheyDownload(t *testing.T) {
	a, _ := libraryApp(t, "http://127.0.0.1:9", download.Options{}, hw.Info{RAMTotal: 25_300_000_000})
	l := a.Library
	waitFor(t, "the catalog", func() bool { return libraryCardOf(l, catalog.GGUFID) != nil })
	for _, id := range []string{catalog.NVFP4ID, catalog.GGUFID} {
		c := libraryCardOf(l, id)
		got := shownText(c.card)
		if strings.Contains(got, "made locally") || strings.Contains(got, "Made on this PC") ||
			!strings.Contains(got, "GB download") {
			t.Errorf("%s card says:\n%s", id, got)
		}
	}
	dg := libraryCardOf(l, catalog.DiffusionGemmaID)
	selectProfile(dg, "int4")
	if got := uiRead(func() string { return dg.fit.Text }); !strings.Contains(got, "Made on this PC from the bf16 download") {
		t.Errorf("int4 of the bf16 checkpoint: %q", got)
	}
	selectProfile(dg, "bf16")
	if got := uiRead(func() string { return dg.fit.Text }); !strings.Contains(got, "51.6 GB download") || !strings.Contains(got, "Won't fit") ||
		!strings.Contains(got, "95% of the 25.3 GB of RAM (24.0 GB)") || strings.Contains(got, " + ") {
		t.Errorf("bf16 fit line: %q", got)
	}
	mini := libraryCardOf(l, catalog.MiniID)
	if got := shownText(mini.buttons); strings.Contains(got, "Use") || !strings.Contains(got, "Active") {
		t.Errorf("the built-in Mini, active on a fresh install, shows buttons %q", got)
	}
}

// TestLibraryFromDisk: on a PC with 16 GiB of RAM and no GPU, the NVFP4 26B (about
// 17.6 GB) runs with its weights read from the disk as they are needed: its card
// says so in orange, with what must stay in memory, and gives its speed as at most
// the in-memory estimate; on 8 GiB it won't fit.
func TestLibraryFromDisk(t *testing.T) {
	for _, c := range []struct {
		ram        int64
		want       string
		importance widget.Importance
	}{{16 << 30, "From the disk", widget.WarningImportance}, {8 << 30, "Won't fit", widget.DangerImportance}} {
		a, _ := libraryApp(t, "http://127.0.0.1:9", download.Options{}, hw.Info{RAMTotal: c.ram})
		l := a.Library
		waitFor(t, "the catalog", func() bool { return libraryCardOf(l, catalog.NVFP4ID) != nil })
		card := libraryCardOf(l, catalog.NVFP4ID)
		got := uiRead(func() string { return card.fit.Text })
		imp := uiRead(func() widget.Importance { return card.fit.Importance })
		if !strings.Contains(got, c.want) || imp != c.importance {
			t.Errorf("%d GiB of RAM: importance %v, %q", c.ram>>30, imp, got)
		}
		if c.want == "From the disk" && !strings.Contains(got, "3.7 GB of it must stay in memory") {
			t.Errorf("%d GiB of RAM: %q", c.ram>>30, got)
		}
	}
	if got := speedText(ProfileFit{Verdict: "from disk", Printer: 5.5, Polaroid: 1.1}); !strings.Contains(got, "At most about 5.5 tokens/s") {
		t.Errorf("from the disk, the speed: %q", got)
	}
}

// TestFitTextSaysTheThreshold: 19.04 GB "won't fit" beside 18.9 GB "tight" on a
// 20 GB PC is explained by the 95% limit, with enough decimals to tell the need
// from the limit.
func TestFitTextSaysTheThreshold(t *testing.T) {
	p := ProfileFit{Budget: 20_000_000_000, Where: "RAM", FitsAt: 0.75, TightAt: 0.95, Weights: 15_400_000_000, Context: 4096}
	for _, c := range []struct {
		verdict string
		need    int64
		want    []string
	}{
		{"won't fit", 19_040_000_000, []string{"Won't fit", "needs about 19.04 GB", "95% of the 20.0 GB of RAM (19.00 GB)", "the system and other programs"}},
		{"tight", 18_900_000_000, []string{"Tight", "needs about 18.9 GB of the 20.0 GB of RAM", "75% (15.0 GB) that runs comfortably", "95% (19.0 GB) limit"}},
		{"fits", 12_000_000_000, []string{"Fits", "needs about 12.0 GB of the 20.0 GB of RAM", "75% (15.0 GB)"}},
		{"from disk", 21_000_000_000, []string{"From the disk", "needs about 21.0 GB", "95% of the 20.0 GB of RAM (19.0 GB)",
			"3.6 GB of it must stay in memory", "read from the model's files"}},
	} {
		p.Verdict, p.Need, p.Resident = c.verdict, c.need, 3_600_000_000
		got := fitText(p)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", c.verdict, got, w)
			}
		}
		if !strings.Contains(got, "15.4 GB is the weights") || !strings.Contains(got, "4096 tokens of context") {
			t.Errorf("%s: %q", c.verdict, got)
		}
	}
}

// TestFitTextSplit: the 26B at int4 on a PC whose 12 GB GPU is too small for it is
// split, 17 of its 30 layers on the GPU (models.Placement.Split): its fit line gives
// both parts' memory, the GPU's and the RAM's, and the sentence saying where its
// layers run; with 6 GB of RAM the CPU's part reads from the disk, and the line says
// so.
func TestFitTextSplit(t *testing.T) {
	dg, _ := catalog.Find(catalog.DiffusionGemmaID)
	for _, c := range []struct {
		ram     int64
		verdict string
		want    []string
	}{
		{64 << 30, "fits", []string{"✔ Fits, split between the GPU and the CPU — needs about 11.1 GB of the 12.9 GB of RTX 4070 VRAM",
			"of the 68.7 GB of RAM for the layers the CPU runs",
			"It is too big for the RTX 4070's 12.9 GB of memory (it needs about 17.9 GB there), so 17 of its 30 layers run on the GPU and the rest on the CPU, from RAM: slower than all on the GPU, faster than all on the CPU."}},
		{6 << 30, "from disk", []string{"▲ From the disk, split between the GPU and the CPU — needs about 11.1 GB of the 12.9 GB of RTX 4070 VRAM",
			"of the 6.4 GB of RAM", "must stay in memory", "so 17 of its 30 layers run on the GPU and the rest on the CPU, from RAM and the disk"}},
	} {
		pf := profileFit(models.Entry{Entry: dg}, quant.Int4Profile, hw.Info{Device: "gpu", RAMTotal: c.ram,
			GPUs: []hw.GPU{{Name: "RTX 4070", VRAMTotal: 12 << 30}}})
		got := fitText(pf)
		if pf.Split == "" || pf.OnCPU != "" || !pf.GPU || pf.Verdict != c.verdict || pf.HostNeed <= 0 || pf.RAM != c.ram {
			t.Errorf("%d GiB of RAM: %+v", c.ram>>30, pf)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%d GiB of RAM: %q lacks %q", c.ram>>30, got, w)
			}
		}
	}
}

// TestLibrarySaysItIsLoading: while the first list is being read (the fit and
// speed estimates measure this PC once, seconds on a small one), the Library says
// so instead of showing no models at all; the line goes when the cards come.
func TestLibrarySaysItIsLoading(t *testing.T) {
	release := make(chan struct{})
	a, _ := libraryAppWith(t, "http://127.0.0.1:9", download.Options{}, func() hw.Info {
		<-release
		return hw.Info{RAMTotal: 25_300_000_000}
	})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	shown := shownText(a.win.Content())
	if !strings.Contains(shown, libraryLoading) {
		t.Errorf("while the list is read the Library shows:\n%s\nwant a line saying it is loading", shown)
	}
	if libraryCardOf(a.Library, catalog.GGUFID) != nil {
		t.Fatal("a card before the list was read")
	}
	close(release)
	waitFor(t, "the catalog", func() bool { return libraryCardOf(a.Library, catalog.GGUFID) != nil })
	if shown := shownText(a.win.Content()); strings.Contains(shown, libraryLoading) {
		t.Errorf("the loading line stays beside the cards")
	}
}

// TestLibraryProblemInPlainWords maps the common download failures to what to do.
func TestLibraryProblemInPlainWords(t *testing.T) {
	dial := func(e error) error {
		return fmt.Errorf("pull x: file list: %w", &url.Error{Op: "Get", URL: "https://huggingface.co/api",
			Err: &net.OpError{Op: "dial", Net: "tcp", Err: e}})
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{dial(&net.DNSError{Err: "no such host", Name: "huggingface.co", IsNotFound: true}), "Cannot reach the model hub"},
		{dial(os.NewSyscallError("connect", syscall.ECONNREFUSED)), "Cannot reach the model hub"},
		{fmt.Errorf("pull: %w", context.DeadlineExceeded), "Cannot reach the model hub"},
		{fmt.Errorf("pull: %w", hub.ErrUnauthorized), "accept its license on huggingface.co"},
		{fmt.Errorf("pull: %w", hub.ErrNotFound), "does not have this model's files"},
		{fmt.Errorf("write: %w", download.ErrNoSpace), "Not enough free disk space"},
		{&os.PathError{Op: "write", Path: "x.part", Err: syscall.ENOSPC}, "Not enough free disk space"},
		{fmt.Errorf("model.safetensors: %w", &download.VerifyError{File: "model.safetensors", Algo: "sha256"}), "checksum does not match"},
		{fmt.Errorf("x: %w", download.ErrStalled), "stalled"},
		{errors.New("something else"), "Could not download M: something else"},
	} {
		if got := libraryProblem("download M", c.err); !strings.Contains(got, c.want) {
			t.Errorf("%v:\n got %q\nwant %q", c.err, got, c.want)
		}
	}
}

// TestLibraryUnreachableHubSaysTheReasonOnly: a hub that cannot be reached says
// so and, in brackets, the system's reason — not the chain of requests it
// happened under ('pull nvidia/…: file list of nvidia/…@main: Get
// "https://huggingface.co/api/models/…?blobs=true": dial tcp: lookup …'), four
// lines of red on the card, as darkroom pull says it.
func TestLibraryUnreachableHubSaysTheReasonOnly(t *testing.T) {
	err := fmt.Errorf("pull nvidia/m: file list of nvidia/m@main: %w", &url.Error{Op: "Get",
		URL: "https://huggingface.co/api/models/nvidia/m/revision/main?blobs=true",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "huggingface.co", IsNotFound: true}}})
	got := libraryProblem("download M", err)
	want := "Cannot reach the model hub — check the connection, or set a mirror in the Hugging Face box below. " +
		"(dial tcp: lookup huggingface.co: no such host)"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestScreensFitANarrowWindow: no screen holds the window larger than the
// smallest supported size, smallestWindowSize (a Card's subtitle, a long model
// name and a license line, which never wrapped, held it at about 1037 px wide).
func TestScreensFitANarrowWindow(t *testing.T) {
	a, _ := libraryApp(t, "http://127.0.0.1:9", download.Options{}, hw.Info{RAMTotal: 25_300_000_000})
	waitFor(t, "the catalog", func() bool { return libraryCardOf(a.Library, catalog.GGUFID) != nil })
	var need fyne.Size
	asUI(func() { need = a.win.Content().MinSize() })
	if need.Width > smallestWindowSize.Width || need.Height > smallestWindowSize.Height {
		t.Errorf("the window cannot be smaller than %.0f×%.0f px (the smallest supported: %.0f×%.0f)",
			need.Width, need.Height, smallestWindowSize.Width, smallestWindowSize.Height)
	}
}

// TestLibraryLocalModelCardHasNoEmptyPicker: a model with no catalog entry (the
// Mini made int8 here, a repo pulled by name) has nothing to choose, so its card
// shows no profile picker; it showed 'Profile (Select one)' over an empty list,
// and its subtitle read ' · active model'.
func TestLibraryLocalModelCardHasNoEmptyPicker(t *testing.T) {
	a, lib := libraryApp(t, "http://127.0.0.1:9", download.Options{}, hw.Info{RAMTotal: 25_300_000_000})
	name, _, err := lib.m.Quantize(context.Background(), catalog.MiniID, models.QuantizeOptions{Profile: quant.Int8Profile})
	if err != nil {
		t.Fatal(err)
	}
	if err := lib.m.SetActive(name); err != nil {
		t.Fatal(err)
	}
	a.Library.Refresh()
	var c *libraryCard
	waitFor(t, "the local model's card", func() bool { c = libraryCardOf(a.Library, name); return c != nil })
	shown := shownText(c.card)
	if strings.Contains(shown, "Profile") || strings.Contains(shown, "(Select one)") {
		t.Errorf("the card of %s offers a profile to pick from none:\n%s", name, shown)
	}
	if strings.Contains(shown, " · active model") || !strings.Contains(shown, "active model") {
		t.Errorf("the card of %s: want its subtitle 'active model':\n%s", name, shown)
	}
}

// TestHuggingFaceBoxSaves: the Hugging Face box's Save says what it saved, next
// to it, and a mirror cleared there is dropped at once. Save showed nothing
// when it worked and put a refusal at the top of the Library, out of sight of
// the box at its bottom; a cleared mirror stayed in use until a restart (the
// card's 'clear it to use huggingface.co' did not), and HF_TOKEN was dropped
// with an empty token box.
func TestHuggingFaceBoxSaves(t *testing.T) {
	t.Setenv("HF_ENDPOINT", "")
	t.Setenv("HF_TOKEN", "hf_env")
	a, lib := libraryApp(t, "", download.Options{}, hw.Info{RAMTotal: 25_300_000_000})
	l := a.Library
	said := func() string { return uiRead(func() string { return l.hubMsg.Text }) }
	typeText(l.mirror, "hf-mirror.example")
	tap(l.saveHub)
	if got := said(); !strings.Contains(got, "the mirror must be an http(s) address") {
		t.Errorf("a mirror without http(s): the box says %q", got)
	}
	asUI(func() { l.mirror.SetText("https://hf-mirror.example/") })
	tap(l.saveHub)
	if got, h := said(), lib.m.Hub(); got != "Saved: downloads come from https://hf-mirror.example." || h.Endpoint != "https://hf-mirror.example" {
		t.Errorf("a mirror saved: the box says %q, downloads from %s", got, h.Endpoint)
	}
	asUI(func() { l.mirror.SetText("") })
	tap(l.saveHub)
	if got, h := said(), lib.m.Hub(); got != "Saved: downloads come from https://huggingface.co." || h.Endpoint != "https://huggingface.co" || h.Token != "hf_env" {
		t.Errorf("the mirror cleared: the box says %q, downloads from %s with token %q; want huggingface.co and HF_TOKEN's", got, h.Endpoint, h.Token)
	}
}

// thinkingModel is a model with a thinking channel.
type thinkingModel struct{ *fakeModel }

func (m thinkingModel) Info() ModelInfo {
	i := m.fakeModel.Info()
	i.Name, i.Builtin, i.Thinking = "thinker", false, true
	return i
}

// TestChatThinkingBeforeTheModelLoads: with a downloaded model active, the Chat's
// Thinking box can be ticked before the first message — it was greyed out until
// a generation had loaded the model, so a chat could not start with thinking on —
// and the request asks for thinking only where the loaded model has it; with the
// built-in Mini, which has none, it stays greyed from the start.
func TestChatThinkingBeforeTheModelLoads(t *testing.T) {
	a, lib := libraryApp(t, "http://127.0.0.1:9", download.Options{}, hw.Info{RAMTotal: 25_300_000_000})
	if got := uiRead(func() string { return fmt.Sprint(a.Chat.thinking.Disabled()) }); got != "true" {
		t.Errorf("Darkroom Mini active: Thinking enabled")
	}
	name, _, err := lib.m.Quantize(context.Background(), catalog.MiniID, models.QuantizeOptions{Profile: quant.Int8Profile})
	if err != nil {
		t.Fatal(err)
	}
	if err := lib.m.SetActive(name); err != nil {
		t.Fatal(err)
	}
	m := thinkingModel{&fakeModel{answers: wikiAnswers}}
	a.deps.Loader = LoaderFunc(func(context.Context) (Model, error) { return m, nil })
	a.models = newModelHost(a.deps.Loader)
	c := a.Chat
	asUI(c.NewThread)
	if c.thinking.Disabled() {
		t.Fatalf("%s active, nothing loaded yet: Thinking greyed out", name)
	}
	tap(c.thinking)
	typeText(c.input, "What is Unix?")
	tap(c.send)
	c.run.Wait()
	if calls := m.Calls(); len(calls) != 1 || !calls[0].req.Thinking {
		t.Errorf("the first message with Thinking ticked: %d requests, thinking %v", len(calls), len(calls) == 1 && calls[0].req.Thinking)
	}
}

// TestEnterSubmitsTheLibraryBoxes: Enter in the Remote servers box tests the
// connection and Enter in the Hugging Face box saves it, as Enter in the
// Encyclopedia's address bar or the Race's topic starts them; it did nothing.
func TestEnterSubmitsTheLibraryBoxes(t *testing.T) {
	t.Setenv("HF_ENDPOINT", "")
	a, _ := libraryApp(t, "", download.Options{}, hw.Info{RAMTotal: 25_300_000_000})
	enter := func(e *widget.Entry) { asUI(func() { e.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn}) }) }
	r := a.remote
	enter(r.url)
	if got := uiRead(func() string { return r.result.Text }); got != remoteNeedsURL {
		t.Errorf("Enter in the Base URL box: %q, want %q", got, remoteNeedsURL)
	}
	enter(r.key)
	if got := uiRead(func() string { return r.result.Text }); got != remoteNeedsURL {
		t.Errorf("Enter in the Key box: %q, want %q", got, remoteNeedsURL)
	}
	l := a.Library
	asUI(func() { l.mirror.SetText("https://hf-mirror.example") })
	enter(l.mirror)
	if got := uiRead(func() string { return l.hubMsg.Text }); got != "Saved: downloads come from https://hf-mirror.example." {
		t.Errorf("Enter in the Mirror box: %q", got)
	}
	asUI(func() { l.mirror.SetText("") })
	enter(l.token)
	if got := uiRead(func() string { return l.hubMsg.Text }); got != "Saved: downloads come from https://huggingface.co." {
		t.Errorf("Enter in the token box: %q", got)
	}
}
