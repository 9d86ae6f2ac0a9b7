package ui

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/models"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/download"
	"github.com/darkroomlabs/darkroom/models/hubtest"
	"github.com/darkroomlabs/darkroom/models/hw"
)

// TestLibraryDownloadsAnyHubModel: a DiffusionGemma model the catalog does not
// list downloads from the Library by its page's address, as copied from a
// browser, and gets a card of its own; a repo of another architecture, one the
// Hub does not have and words that name no model are refused under the box,
// in words, before anything downloads — and nothing is left in the Library
// for them. The Library had only its catalog; the rest took `darkroom pull`.
func TestLibraryDownloadsAnyHubModel(t *testing.T) {
	h, files := gemmaHub(t, 64<<10, 3)
	h.Add("acme/mini-ft", &hubtest.Repo{Files: files})
	h.Add("acme/llama", &hubtest.Repo{Files: []*hubtest.File{
		{Name: "config.json", Data: []byte(`{"architectures":["LlamaForCausalLM"],"model_type":"llama"}`)},
		{Name: "model.safetensors", Data: make([]byte, 4096), LFS: true},
	}})
	a, _ := libraryApp(t, h.URL, download.Options{Interval: 20 * time.Millisecond},
		hw.Info{GPUs: []hw.GPU{{Name: "Test GPU", VRAMTotal: 80 << 30}}, RAMTotal: 64 << 30})
	l := a.Library
	waitFor(t, "the catalog", func() bool { return uiRead(func() int { return len(l.byName) }) >= 2 })

	try := func(typed string) string {
		t.Helper()
		asUI(func() { l.repo.SetText("") })
		typeText(l.repo, typed)
		asUI(func() { l.repoGet.OnTapped() })
		waitFor(t, "the Hub's answer to "+typed, func() bool {
			return uiRead(func() bool { return !l.repoGet.Disabled() && !strings.HasPrefix(l.repoMsg.Text, "Asking") })
		})
		return uiRead(func() string { return l.repoMsg.Text })
	}
	for typed, want := range map[string]string{
		"not a repo":          "is not a Hugging Face model: give its name (owner/name) or its page's address",
		"acme/nothing-there":  "has no model called acme/nothing-there: check its name",
		h.URL + "/acme/llama": `model_type is "llama", want "diffusion_gemma" (Darkroom runs DiffusionGemma models)`,
	} {
		if got := try(typed); !strings.Contains(got, want) || uiRead(func() widget.Importance { return l.repoMsg.Importance }) != widget.DangerImportance {
			t.Errorf("%q: %q, want it to say %q, in red", typed, got, want)
		}
	}
	if got := try("https://huggingface.co/acme/mini-ft/tree/main"); !strings.Contains(got, "Started downloading acme/mini-ft") {
		t.Fatalf("a DiffusionGemma fine-tune: %q", got)
	}
	if typed := uiRead(func() string { return l.repo.Text }); typed != "" {
		t.Errorf("the box still holds %q", typed)
	}
	state := func(name string) string {
		return uiRead(func() string {
			if c := l.byName[name]; c != nil {
				return c.entry.State
			}
			return ""
		})
	}
	waitFor(t, "the fine-tune's card, ready", func() bool { return state("acme/mini-ft") == "ready" })
	if s := state("acme/llama"); s != "" {
		t.Errorf("the refused Llama repo has a card (%s)", s)
	}

	// A GGUF repo: named alone, the box lists its quantizations; one named after it
	// downloads, alone, into a card of its own.
	q3, err := hubtest.GGUF(config.Tiny(), gguf.Q4KM) // (its header is read before the download)
	if err != nil {
		t.Fatal(err)
	}
	h.Add("acme/dg-GGUF", &hubtest.Repo{Files: []*hubtest.File{files[0], files[1],
		{Name: "dg-Q3_K_M.gguf", Data: q3, LFS: true},
		{Name: "dg-Q4_K_M.gguf", Data: make([]byte, 1<<20), LFS: true}}})
	if got := try("acme/dg-GGUF:Q9_K"); !strings.Contains(got, "acme/dg-GGUF has no Q9_K GGUF: choose one of its quantizations") {
		t.Errorf("a quantization the repo lacks: %q", got)
	}
	if got := try("acme/dg-GGUF"); !strings.Contains(got, "acme/dg-GGUF holds a GGUF file per quantization: choose one") {
		t.Errorf("a GGUF repo named alone: %q", got)
	}
	var offered []string
	var q3Button *widget.Button
	asUI(func() {
		for _, o := range l.repoQuants.Objects {
			b := o.(*widget.Button)
			offered = append(offered, b.Text)
			if strings.HasPrefix(b.Text, "Q3_K_M") {
				q3Button = b
			}
		}
	})
	// Each says where it would run here, by its size and the dimensions in the
	// smallest one's header (read by ranges): a tiny model fits the GPU.
	if len(offered) != 2 || !uiRead(l.repoQuants.Visible) || q3Button == nil || offered[1] != "Q4_K_M · 1.0 MB · fits the GPU" {
		t.Fatalf("the quantizations offered: %q", offered)
	}
	asUI(func() { q3Button.OnTapped() })
	waitFor(t, "the Q3_K_M's download to start", func() bool {
		return uiRead(func() bool { return strings.Contains(l.repoMsg.Text, "Started downloading acme/dg-GGUF:Q3_K_M") })
	})
	if uiRead(l.repoQuants.Visible) {
		t.Error("the quantizations are still offered")
	}
	waitFor(t, "the Q3_K_M's card, ready", func() bool { return state("acme/dg-GGUF:Q3_K_M") == "ready" })
	if h.Sent("dg-Q4_K_M.gguf") != 0 {
		t.Error("the Q4_K_M was downloaded too")
	}
}

// TestLibraryCardOfADownloadThatEndedWhileListed: a download that ends while
// the Library is listing the models (its card not made yet: a repo just typed
// in the Hugging Face box) shows as ready; its end arrived for no card and was
// dropped, and the card kept the "downloading" the listing had read, for good.
func TestLibraryCardOfADownloadThatEndedWhileListed(t *testing.T) {
	h, files := gemmaHub(t, 256<<10, 4)
	h.Add("acme/mini-ft", &hubtest.Repo{Files: files})
	h.SetBytesPerSec(256 << 10) // about a second of weights
	var hold atomic.Pointer[chan struct{}]
	info := hw.Info{GPUs: []hw.GPU{{Name: "Test GPU", VRAMTotal: 80 << 30}}, RAMTotal: 64 << 30}
	a, lib := libraryAppWith(t, h.URL, download.Options{Interval: 20 * time.Millisecond}, func() hw.Info {
		if g := hold.Load(); g != nil {
			<-*g // a listing held after it read the models' states
		}
		return info
	})
	l := a.Library
	waitFor(t, "the catalog", func() bool { return uiRead(func() int { return len(l.byName) }) >= 2 })
	gate := make(chan struct{})
	hold.Store(&gate)
	typeText(l.repo, "acme/mini-ft")
	asUI(func() { l.repoGet.OnTapped() }) // Start, then a listing that reads "downloading" and waits
	waitFor(t, "the download to start", func() bool { return lib.m.Transfer("acme/mini-ft") != nil })
	if err := lib.m.Transfer("acme/mini-ft").Wait(); err != nil {
		t.Fatal(err)
	}
	hold.Store(nil)
	close(gate)
	waitFor(t, "the card, ready", func() bool {
		return uiRead(func() bool { c := l.byName["acme/mini-ft"]; return c != nil && c.entry.State == "ready" })
	})
}

// TestLibraryQuantsSayWhereTheyRun: a GGUF repo's quantizations, offered as buttons,
// say where each would run on this PC (models.JudgeQuants, by the file's size) where
// the repo is a catalog model's: on a 16 GB card the Q3_K_M tight on the GPU, the
// Q4_K_M split between the GPU (23 of its 30 layers) and the CPU, the BF16 split too,
// its CPU's part from the disk. A gamer had a list of names and sizes.
func TestLibraryQuantsSayWhereTheyRun(t *testing.T) {
	info := hw.Info{Device: "gpu", GPUs: []hw.GPU{{Name: "RTX 4080", VRAMTotal: 16 << 30}}, RAMTotal: 32 << 30}
	a, _ := libraryApp(t, "http://127.0.0.1:9", download.Options{}, info)
	l := a.Library
	choice := &models.QuantChoice{Repo: "unsloth/diffusiongemma-26B-A4B-it-GGUF"}
	for _, m := range []gguf.Mix{gguf.Q3KM, gguf.Q4KM} {
		e, _ := catalog.Find(catalog.GGUFIDs[m])
		choice.Quants = append(choice.Quants, models.Quant{Name: string(m), Size: e.Size})
	}
	choice.Quants = append(choice.Quants, models.Quant{Name: "BF16", Size: 51_600_000_000})
	models.JudgeQuants(choice, info)
	asUI(func() { l.offerQuants(choice) })
	var got []string
	asUI(func() {
		for _, o := range l.repoQuants.Objects {
			got = append(got, o.(*widget.Button).Text)
		}
	})
	want := []string{"Q3_K_M · 13.3 GB · tight on the GPU", "Q4_K_M · 16.8 GB · 23 of 30 layers on the GPU",
		"BF16 · 51.6 GB · 6 of 30 layers on the GPU, the rest from the disk"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the buttons say %q, want %q", got, want)
	}
}
