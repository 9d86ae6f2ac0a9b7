package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/download"
	"github.com/darkroomlabs/darkroom/models/hw"
	"github.com/darkroomlabs/darkroom/models/store"
)

// TestLibraryRecommendsADownload: the Library marks the download that suits
// this PC, its profile picked: on a 24 GB gaming card the 17 GB Q4_K_M GGUF, which
// runs as the 4-bit profile made from the 52 GB download does (not the 8-bit Q6_K
// GGUF its 32 GB of RAM would hold, on the CPU); on a 16 GB card, which no 4-bit
// download fits, the 3-bit Q3_K_M GGUF, tight there (the line says to close what
// else uses the GPU), not the Q4_K_M its RAM runs on the CPU; on an 80 GB card DiffusionGemma as
// published (bf16); on a PC with 64 GB of RAM and no GPU the 8-bit Q6_K GGUF, a
// third of the download int8 is made from; on a PC with 16 GB of RAM, where nothing
// fits, the smallest download that runs from the disk (the Q3_K_M: of all, it reads
// the fewest bytes a token); where nothing runs, nothing.
// A gamer had to work it out from four fit lines.
func TestLibraryRecommendsADownload(t *testing.T) {
	for _, c := range []struct {
		name          string
		info          hw.Info
		want, profile string
	}{
		{"24 GB GPU", hw.Info{GPUs: []hw.GPU{{Name: "RTX 4090", VRAMTotal: 24 << 30, VRAMFree: 23 << 30}}, RAMTotal: 32 << 30}, catalog.GGUFID, "int4"},
		{"16 GB GPU", hw.Info{GPUs: []hw.GPU{{Name: "RTX 4080", VRAMTotal: 16 << 30, VRAMFree: 15 << 30}}, RAMTotal: 32 << 30}, catalog.GGUFIDs[gguf.Q3KM], "int4"},
		{"80 GB GPU", hw.Info{GPUs: []hw.GPU{{Name: "H100", VRAMTotal: 80 << 30, VRAMFree: 79 << 30}}, RAMTotal: 128 << 30}, catalog.DiffusionGemmaID, "bf16"},
		{"64 GB of RAM, no GPU", hw.Info{RAMTotal: 64 << 30}, catalog.GGUFIDs[gguf.Q6KM], "int8"},
		{"16 GB of RAM, no GPU", hw.Info{RAMTotal: 16 << 30}, catalog.GGUFIDs[gguf.Q3KM], "int4"}, // from the disk: the smallest download
		{"8 GB of RAM, no GPU", hw.Info{RAMTotal: 8 << 30}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, _ := libraryApp(t, "http://127.0.0.1:9", download.Options{}, c.info)
			l := a.Library
			waitFor(t, "the catalog", func() bool { return libraryCardOf(l, catalog.GGUFID) != nil })
			var marked []string
			ids := []string{catalog.DiffusionGemmaID, catalog.NVFP4ID}
			for _, m := range gguf.Mixes {
				ids = append(ids, catalog.GGUFIDs[m])
			}
			for _, id := range ids {
				card := libraryCardOf(l, id)
				if uiRead(card.rec.Visible) {
					marked = append(marked, id)
					if got := uiRead(func() string { return card.profile.Selected }); got != c.profile {
						t.Errorf("%s is recommended in profile %q, picked %q", id, c.profile, got)
					}
					if note := uiRead(func() string { return card.rec.Text }); note == "" {
						t.Error("an empty recommendation")
					}
				}
			}
			switch {
			case c.want == "" && len(marked) > 0:
				t.Errorf("recommended %v where nothing fits", marked)
			case c.want != "" && (len(marked) != 1 || marked[0] != c.want):
				t.Errorf("recommended %v, want %s", marked, c.want)
			}
			// Over the cards, a line says so (orange where the download runs from the
			// disk); Show it scrolls to the card.
			if shown := uiRead(l.recLine.Visible); shown != (c.want != "") {
				t.Errorf("the recommendation's line shown: %v", shown)
			}
			if c.want != "" {
				line := l.recLine.Objects[0].(*widget.Label)
				imp, text := uiRead(func() widget.Importance { return line.Importance }), uiRead(func() string { return line.Text })
				if fromDisk := strings.Contains(text, "from the disk"); fromDisk != (imp == widget.WarningImportance) || fromDisk != (c.info.RAMTotal == 16<<30) {
					t.Errorf("the recommendation's line, importance %v: %q", imp, text)
				}
				if tight := strings.Contains(text, "just fits the RTX 4080 VRAM: close games"); tight != (c.name == "16 GB GPU") {
					t.Errorf("the recommendation's line: %q", text)
				}
			}
			if c.want != "" {
				waitFor(t, "the Library's listings", func() bool { return uiRead(func() bool { return l.shown == l.listings.Load() }) })
				asUI(func() { a.win.Resize(fyne.NewSize(900, 500)); l.content.(*container.Scroll).ScrollToTop() })
				tap(l.recLine.Objects[1].(*widget.Button))
				card := libraryCardOf(l, c.want)
				top := uiRead(func() float32 {
					d := fyne.CurrentApp().Driver()
					return d.AbsolutePositionForObject(card.card).Y - d.AbsolutePositionForObject(l.content).Y
				})
				if top < -1 || top > 50 {
					t.Errorf("after Show it the recommended card is %.0f px from the top of the Library", top)
				}
			}
		})
	}
}

// TestRecommendedWaitsForTheUsersChoice: once a model other than the built-in
// one is downloaded or downloading, nothing is recommended.
func TestRecommendedWaitsForTheUsersChoice(t *testing.T) {
	fit := ProfileFit{Name: "int4", Bytes: 17 << 30, Verdict: "fits"}
	entries := []LibraryEntry{{Name: catalog.MiniID, Builtin: true, State: "built in"},
		{Name: "a", State: "available", Profiles: []ProfileFit{fit}}, {Name: "b", State: "available", Profiles: []ProfileFit{fit}}}
	if r := recommended(entries, -1); r.name != "a" {
		t.Errorf("recommended %q of two alike, want the first", r.name)
	}
	entries[2].State = "downloading"
	if r := recommended(entries, -1); r.name != "" {
		t.Errorf("recommended %q while another downloads", r.name)
	}
}

// TestRecommendedWeighsSpeed: among the fitting 4-bit profiles the smallest download
// is recommended, unless another writes at least twice as fast in the printer here
// (both estimated), as Darkroom's int4 made on the PC does on a CPU against the NVFP4
// and GGUF downloads; with speeds unknown (a GPU's) or close, the smallest download.
func TestRecommendedWeighsSpeed(t *testing.T) {
	entries := func(int4, nvfp4, gguf float64) []LibraryEntry {
		return []LibraryEntry{
			{Name: "dg", State: "available", Profiles: []ProfileFit{
				{Name: "bf16", Bytes: 52e9, Verdict: "won't fit"},
				{Name: "int4", ConvertedFrom: "bf16", Verdict: "fits", Printer: int4}}},
			{Name: "nv", State: "available", Profiles: []ProfileFit{{Name: "nvfp4", Bytes: 19e9, Verdict: "fits", Printer: nvfp4}}},
			{Name: "gg", State: "available", Profiles: []ProfileFit{{Name: "int4", Bytes: 17e9, Verdict: "fits", Printer: gguf}}},
		}
	}
	for _, c := range []struct {
		name              string
		int4, nvfp4, gguf float64
		want              string
	}{
		{"speeds unknown", 0, 0, 0, "gg"},
		{"close speeds", 3.9, 3, 2.5, "gg"},
		{"the CPU here", 3.9, 0.88, 1.8, "dg"},
		{"the GGUF's speed unknown", 3.9, 0.88, 0, "gg"}, // not comparable: by size
	} {
		if got := recommended(entries(c.int4, c.nvfp4, c.gguf), -1); got.name != c.want {
			t.Errorf("%s: recommended %q (%s), want %q", c.name, got.name, got.profile, c.want)
		}
	}
}

// TestRecommendedWeighsDisk: only what the models folder has the free space for is
// weighed — a profile made on this PC needs its download and, kept beside it, what it
// is made into — and where nothing has, the best of all is recommended, its note
// saying what it needs and what to do. A PC with 64 GB of RAM had int8 made from the
// 52 GB download recommended (80 GB on disk) where its disk held 60 GB free.
func TestRecommendedWeighsDisk(t *testing.T) {
	entries := []LibraryEntry{
		{Name: "dg", Title: "DiffusionGemma", State: "available", Profiles: []ProfileFit{
			{Name: "bf16", Bytes: 52e9, Verdict: "won't fit", Keeps: 2},
			{Name: "int8", ConvertedFrom: "bf16", Weights: 28e9, Verdict: "fits", Keeps: 1},
			{Name: "int4", ConvertedFrom: "bf16", Weights: 15e9, Verdict: "fits"}}},
		{Name: "gg", Title: "DiffusionGemma GGUF", State: "available", Profiles: []ProfileFit{{Name: "int4", Bytes: 17e9, Verdict: "fits"}}},
	}
	int8Need := int64(52e9) + store.SpaceMargin(52e9) + 28e9 + store.SpaceMargin(28e9)
	for _, c := range []struct {
		name, want, profile string
		free                int64
		short               bool
	}{
		{"free space unknown", "dg", "int8", -1, false},
		{"a big disk", "dg", "int8", 200e9, false},
		{"int8 and its download just fit", "dg", "int8", int8Need, false},
		{"60 GB free: only the GGUF", "gg", "int4", 60e9, false},
		{"10 GB free: none, the best said", "dg", "int8", 10e9, true},
	} {
		r := recommended(entries, c.free)
		if r.name != c.want || r.profile != c.profile || r.short != c.short {
			t.Errorf("%s: recommended %q (%s, short of disk %v), want %q (%s, %v)", c.name, r.name, r.profile, r.short, c.want, c.profile, c.short)
		}
		if note := r.note(true); strings.Contains(note, "free in the models folder") != c.short {
			t.Errorf("%s: note %q", c.name, note)
		}
	}
	r := recommended(entries, 10e9)
	want := "Recommended for this PC: DiffusionGemma (int8), a 52.0 GB download that fits here — but it needs, with the model " +
		"made from it, " + store.FormatBytes(int8Need) + " free in the models folder, which has 10.0 GB: free some space, or " +
		"Move… the folder to a bigger disk"
	if got := r.note(true); got != want {
		t.Errorf("note = %q\nwant   %q", got, want)
	}
}

// TestRecommendationNote: the recommendation names the profile only where its card
// offers several: "DiffusionGemma 26B-A4B Q4_K_M (Unsloth GGUF) (int4)" read as if
// the GGUF were Darkroom's int4 profile.
func TestRecommendationNote(t *testing.T) {
	gguf := recommendation{title: "DiffusionGemma 26B-A4B Q4_K_M (Unsloth GGUF)", profile: "int4", download: 16_800_000_000}
	made := recommendation{title: "DiffusionGemma 26B-A4B (instruction-tuned)", profile: "int4", download: 51_600_000_000, picked: true}
	for _, c := range []struct {
		r         recommendation
		withTitle bool
		want      string
	}{
		{gguf, true, "Recommended for this PC: DiffusionGemma 26B-A4B Q4_K_M (Unsloth GGUF), a 16.8 GB download that fits here"},
		{gguf, false, "Recommended for this PC: a 16.8 GB download that fits here"},
		{made, true, "Recommended for this PC: DiffusionGemma 26B-A4B (instruction-tuned) (int4), a 51.6 GB download that fits here"},
		{made, false, "Recommended for this PC: int4, a 51.6 GB download that fits here"},
	} {
		if got := c.r.note(c.withTitle); got != c.want {
			t.Errorf("note(%v) = %q, want %q", c.withTitle, got, c.want)
		}
	}
}

// TestRecommendedFromDisk: on a PC where nothing fits (16 GB of RAM), the Library
// recommends a download that runs there from the disk — of those the smallest, as
// among fitting ones — saying so with its speed where the disk was measured; not a
// tight one; and where anything fits, that one.
func TestRecommendedFromDisk(t *testing.T) {
	entries := []LibraryEntry{{Name: catalog.MiniID, Builtin: true, State: "built in"},
		{Name: "dg", State: "available", Profiles: []ProfileFit{
			{Name: "bf16", Bytes: 52e9, Verdict: "won't fit"},
			{Name: "int4", ConvertedFrom: "bf16", Verdict: "tight", Printer: 5}}},
		{Name: "nvfp4", Title: "NVFP4", State: "available", Profiles: []ProfileFit{{Name: "nvfp4", Bytes: 18.9e9, Verdict: "from disk", Printer: 2.3, DiskRate: 1.5e9}}},
		{Name: "gguf", Title: "GGUF", State: "available", Profiles: []ProfileFit{{Name: "int4", Bytes: 16.8e9, Verdict: "from disk", Printer: 1.9, DiskRate: 1.5e9}}},
	}
	r := recommended(entries, -1)
	if r.name != "gguf" || !r.fromDisk {
		t.Fatalf("recommended %q (from disk %v), want the smaller download that runs from the disk", r.name, r.fromDisk)
	}
	if got := r.note(true); !strings.Contains(got, "GGUF, a 16.8 GB download — too big for its memory, it runs here reading its weights from the disk, slowly (about 1.9 tokens/s)") {
		t.Errorf("note: %q", got)
	}
	entries[3].Profiles[0].DiskRate = 0 // the disk not measured: its printer is the in-memory bound, not said
	if got := recommended(entries, -1).note(false); strings.Contains(got, "tokens/s") {
		t.Errorf("note with the disk unmeasured: %q", got)
	}
	entries[2].Profiles[0].Verdict = "fits"
	if r := recommended(entries, -1); r.name != "nvfp4" || r.fromDisk {
		t.Errorf("with one fitting, recommended %q (from disk %v)", r.name, r.fromDisk)
	}
	for i := range entries[2:] {
		entries[2+i].Profiles[0].Verdict = "won't fit"
	}
	if r := recommended(entries, -1); r.name != "" {
		t.Errorf("with only a tight profile, recommended %q", r.name)
	}
}

// TestRecommendedTightOnTheGPU: a download tight on the GPU is recommended over those
// that run on the CPU (a 16 GB card: the 3-bit GGUF on it, the 4-bit ones only in the
// RAM), its note saying to close what else uses the GPU; one that fits the GPU with
// room to spare comes first even if it keeps less; tight in the RAM is still not
// recommended.
func TestRecommendedTightOnTheGPU(t *testing.T) {
	q4 := ProfileFit{Name: "int4", Bytes: 16.8e9, Verdict: "fits", OnCPU: "too big for the GPU", Where: "RAM"}
	q3 := ProfileFit{Name: "int4", Bytes: 13.3e9, Verdict: "tight", GPU: true, Where: "RTX 4080 VRAM", Keeps: -1}
	entries := func(q4, q3 ProfileFit) []LibraryEntry {
		return []LibraryEntry{{Name: "q4", Title: "Q4_K_M", State: "available", Profiles: []ProfileFit{q4}},
			{Name: "q3", Title: "Q3_K_M", State: "available", Profiles: []ProfileFit{q3}}}
	}
	r := recommended(entries(q4, q3), -1)
	if want := "Recommended for this PC: Q3_K_M, a 13.3 GB download that just fits the RTX 4080 VRAM: close games and " +
		"other programs that use the GPU before you load it"; r.name != "q3" || r.note(true) != want {
		t.Errorf("recommended %q: %q, want q3: %q", r.name, r.note(true), want)
	}
	gpu := q4
	gpu.OnCPU, gpu.GPU, gpu.Verdict = "", true, "tight"
	fits := q3
	fits.Verdict = "fits"
	if r := recommended(entries(gpu, fits), -1); r.name != "q3" || r.tight {
		t.Errorf("with the 3-bit one fitting the GPU and the 4-bit one tight there, recommended %q (tight %v)", r.name, r.tight)
	}
	cpu := q3
	cpu.GPU, cpu.Where = false, "RAM"
	if r := recommended(entries(q4, cpu), -1); r.name != "q4" {
		t.Errorf("with the 3-bit one tight in the RAM, recommended %q", r.name)
	}
}

// TestRecommendedSplit: a download split between the GPU and the CPU (a 12 GB card:
// the 4-bit ones hold 17 of their 30 layers there) is recommended over one the CPU
// runs alone, whatever that keeps (bf16 in 64 GB of RAM), its note saying it is
// split; one the GPU runs whole, even tight, comes first; from the disk, a split
// comes before the CPU alone too.
func TestRecommendedSplit(t *testing.T) {
	split := ProfileFit{Name: "int4", Bytes: 16.8e9, Verdict: "fits", GPU: true, Where: "RTX 4070 VRAM",
		Split: "It is too big for the RTX 4070's 12.9 GB of memory", HostNeed: 9e9, RAM: 64 << 30}
	cpu := ProfileFit{Name: "bf16", Bytes: 51.6e9, Verdict: "fits", OnCPU: "too big for the GPU", Where: "RAM", Keeps: 2}
	tight := ProfileFit{Name: "int4", Bytes: 13.3e9, Verdict: "tight", GPU: true, Where: "RTX 4070 VRAM", Keeps: -1}
	entries := func(ps ...ProfileFit) []LibraryEntry {
		var es []LibraryEntry
		for _, p := range ps {
			es = append(es, LibraryEntry{Name: p.Name + p.Verdict, Title: p.Name, State: "available", Profiles: []ProfileFit{p}})
		}
		return es
	}
	r := recommended(entries(cpu, split), -1)
	if want := "Recommended for this PC: int4, a 16.8 GB download that runs here split between the GPU and the CPU, too big for the GPU alone"; r.name != "int4fits" || r.note(true) != want {
		t.Errorf("recommended %q: %q, want the split: %q", r.name, r.note(true), want)
	}
	if r := recommended(entries(split, tight), -1); r.name != "int4tight" {
		t.Errorf("with a download tight on the GPU, recommended %q", r.name)
	}
	tightSplit := split
	tightSplit.Verdict = "tight" // its RAM's part
	if r := recommended(entries(tightSplit), -1); r.name != "" {
		t.Errorf("with only a split tight in the RAM, recommended %q", r.name)
	}
	diskSplit, diskCPU := split, cpu
	diskSplit.Verdict, diskCPU.Verdict = "from disk", "from disk"
	diskSplit.Bytes = 60e9 // bigger: the tier, not the size, decides
	if r := recommended(entries(diskCPU, diskSplit), -1); r.name != "int4from disk" || !r.fromDisk {
		t.Errorf("from the disk, recommended %q (from disk %v)", r.name, r.fromDisk)
	}
}
