package ui

import (
	"fmt"
	"math"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/models/speed"
	"github.com/darkroomlabs/darkroom/models/store"
)

// Which download suits this PC. The catalog offers the 26B four ways — bf16 as
// published (52 GB), int8 and int4 made on this PC from that download, NVIDIA's
// NVFP4 export (19 GB) and Unsloth's GGUF (17 GB) — and a gamer with a 16 GB
// card had to work out from four fit lines that the 17 GB download runs as
// well as the 4-bit profile made from 52 GB. The Library says which one, on
// its card.

// recommendation is a download the Library suggests: the model (its card's
// name and title), in profile, download bytes to fetch ("" name: none).
type recommendation struct {
	name, title, profile string
	download             int64
	printer              float64 // its estimated printer tokens/s here (0: unknown)
	// disk is the free space taking it needs in the models folder (diskNeed); short,
	// that no candidate fitted the folder's free bytes, which the note then says.
	disk, free int64
	short      bool
	made       bool // made on this PC from the download (the note's disk sentence says so)
	fromDisk   bool // it runs here from the disk (nothing fits): the note says so
	// tight: it is tight on the GPU (where: its VRAM), nothing else to be on it: the
	// note says so.
	tight bool
	where string
	split bool // it runs split between the GPU and the CPU (ProfileFit.Split): the note says so
	// diskPrinter is a from-disk recommendation's printer tokens/s counting the
	// disk's reads (0: the disk was not measured, and printer is the in-memory bound).
	diskPrinter float64
	// picked: the card offers several profiles, so the note names the one meant; a
	// card of one (the NVFP4 and GGUF downloads, whose names say their format and
	// whose single profile is the estimate's stand-in) is named alone.
	picked bool
}

// recommended is the download the Library suggests for this PC: of every
// profile that fits (not tight, but on a GPU, where tight is still far faster than the
// CPU) of a model to download, those the GPU runs whole before those split between
// it and the CPU (a GPU too small for the whole model) before those placed on the CPU, and
// of the GPU's those that fit before the tight ones (on a 16 GB card the 3-bit
// Q3_K_M GGUF, 15.8 GB there, is tight, and the 4-bit downloads run split),
// then the best kept (ProfileFit.Keeps) — bf16, then int8 (and the 8-bit GGUFs), then
// the 4-bit ones, then the 3-bit one — and among those the smallest download, unless
// another writes at least twice as fast in the printer here (both estimated: on
// a CPU without AVX-512 VNNI NVIDIA's NVFP4 export runs at about a third of the
// speed of the int4 profile made on this PC, and its small download is no
// bargain; with it, whose integer products take its blocks, at about three
// quarters, and it is; so is Unsloth's GGUF, as fast or faster in the printer
// since its Q4_K products run in integer arithmetic). Only those the models folder has the free space for (free
// bytes; < 0: unknown, all) are weighed: a PC with 64 GB of RAM had int8 made from
// the 52 GB download recommended, 80 GB on disk, where its disk held 60 GB free;
// where none has, the best of all, its note saying what to free. Where nothing
// fits, the same among the profiles that run from the disk (models/fit's FromDisk:
// a PC with 16 GB of RAM, where the 26B's 4-bit downloads write a few tokens a
// second and nothing else of the Library's runs) but for the tiers — the smallest
// download, unless another writes twice as fast —, its note saying so; not among
// the tight ones, which need the other programs closed. None where nothing runs,
// or where a model other than the built-in one is already downloaded or
// downloading: the user has chosen.
func recommended(entries []LibraryEntry, free int64) recommendation {
	for _, e := range entries {
		if !e.Builtin && e.State != "available" {
			return recommendation{}
		}
	}
	if r := recommendedOf(entries, free, "fits"); r.name != "" {
		return r
	}
	return recommendedOf(entries, free, "from disk")
}

// recommendedOf is recommended among the profiles judged verdict.
func recommendedOf(entries []LibraryEntry, free int64, verdict string) recommendation {
	var all, onDisk recommendation
	allTier, diskTier := math.MinInt, math.MinInt // any tier beats none: a CPU placement's is −10 and below
	for _, e := range entries {
		if e.Builtin {
			continue
		}
		for _, p := range e.Profiles {
			tight := verdict == "fits" && p.Verdict == "tight" && p.GPU && p.Split == "" // a split's may be the RAM's
			if p.Verdict != verdict && !tight {
				continue
			}
			size := p.Bytes
			if p.ConvertedFrom != "" { // made on this PC from another profile's download
				size = publishedBytes(e, p.ConvertedFrom)
			}
			if size <= 0 {
				continue
			}
			c := recommendation{name: e.Name, title: e.Title, profile: p.Name, download: size, printer: p.Printer,
				picked: len(e.Profiles) > 1, disk: diskNeed(size, p), made: p.ConvertedFrom != "", fromDisk: verdict == "from disk",
				tight: tight, where: p.Where, split: p.Split != ""}
			if c.fromDisk && p.DiskRate > 0 {
				c.diskPrinter = p.Printer
			}
			tier := p.Keeps
			if c.fromDisk {
				tier = 0 // from the disk, the bytes a token reads count, not what the profile keeps: int8 reads twice int4's
			}
			if tight {
				tier -= 5 // below what the GPU holds with room to spare, above the CPU's
			}
			switch {
			case p.OnCPU != "":
				// Too big for this PC's GPU, it runs on the CPU: below any the GPU runs,
				// whatever it keeps (on a 24 GB card with 32 GB of RAM the 8-bit Q6_K
				// GGUF fits the RAM, and outranked the Q4_K_M the GPU runs ten times faster).
				tier -= 10
			case c.split:
				// Split between the GPU and the CPU: slower than any the GPU runs whole,
				// tight included, faster than any the CPU runs alone.
				tier -= 7
			}
			if tier > allTier || (tier == allTier && c.better(all)) {
				all, allTier = c, tier
			}
			if (free < 0 || c.disk <= free) && (tier > diskTier || (tier == diskTier && c.better(onDisk))) {
				onDisk, diskTier = c, tier
			}
		}
	}
	if onDisk.name != "" || all.name == "" {
		return onDisk
	}
	all.free, all.short = free, true
	return all
}

// diskNeed is the free space taking profile p in a download of size bytes needs in
// the models folder: the download, and for a profile made on this PC (kept beside
// the download it is made from) about its weights' bytes, each with the margin the
// downloader keeps free (store.SpaceMargin).
func diskNeed(size int64, p ProfileFit) int64 {
	need := withMargin(size)
	if p.ConvertedFrom != "" && p.Weights > 0 {
		need += withMargin(p.Weights)
	}
	return need
}

// withMargin is n bytes to write and the free space the downloader keeps beside them.
func withMargin(n int64) int64 { return n + store.SpaceMargin(n) }

// better reports whether c is the better recommendation than r of the same tier:
// at least twice r's printer speed (both known), else, unless r is that much
// faster, the smaller download.
func (c recommendation) better(r recommendation) bool {
	if c.printer > 0 && r.printer > 0 {
		switch {
		case c.printer >= 2*r.printer:
			return true
		case r.printer >= 2*c.printer:
			return false
		}
	}
	return c.download < r.download
}

// publishedBytes is the download size of e's profile named from.
func publishedBytes(e LibraryEntry, from string) int64 {
	for _, p := range e.Profiles {
		if p.Name == from {
			return p.Bytes
		}
	}
	return 0
}

// note is the recommendation as its card says it, or with the model's title
// as the line over the cards does.
func (r recommendation) note(withTitle bool) string {
	var what string
	switch {
	case withTitle && r.picked:
		what = r.title + " (" + r.profile + "), "
	case withTitle:
		what = r.title + ", "
	case r.picked:
		what = r.profile + ", "
	}
	note := fmt.Sprintf("Recommended for this PC: %sa %s download that fits here", what, store.FormatBytes(r.download))
	if r.tight {
		note = fmt.Sprintf("Recommended for this PC: %sa %s download that just fits the %s: close games and other "+
			"programs that use the GPU before you load it", what, store.FormatBytes(r.download), r.where)
	}
	if r.split {
		note = fmt.Sprintf("Recommended for this PC: %sa %s download that runs here split between the GPU and the CPU, "+
			"too big for the GPU alone", what, store.FormatBytes(r.download))
	}
	if r.fromDisk {
		rate := ""
		if r.diskPrinter > 0 {
			rate = fmt.Sprintf(" (about %s tokens/s)", speed.Rate(r.diskPrinter))
		}
		note = fmt.Sprintf("Recommended for this PC: %sa %s download — too big for its memory, it runs here reading "+
			"its weights from the disk, slowly%s; nothing in the Library fits", what, store.FormatBytes(r.download), rate)
	}
	if r.short {
		with := ""
		if r.made {
			with = ", with the model made from it,"
		}
		note += fmt.Sprintf(" — but it needs%s %s free in the models folder, which has %s: free some space, or Move… the folder to a bigger disk",
			with, store.FormatBytes(r.disk), store.FormatBytes(r.free))
	}
	return note
}

// recommendRow is the line over the cards naming the recommended download,
// with Show it, which scrolls to its card (it is often below the fold).
func (l *LibraryScreen) recommendRow() fyne.CanvasObject {
	text := widget.NewLabel("")
	text.Wrapping = fyne.TextWrapWord
	text.Importance = widget.SuccessImportance
	show := widget.NewButtonWithIcon("Show it", theme.NavigateNextIcon(), l.showRecommended)
	l.recLine = container.NewBorder(nil, nil, nil, show, text)
	l.recLine.Hide()
	return l.recLine
}

// showRecommendation fills the line over the cards (rebuild calls it).
func (l *LibraryScreen) showRecommendation() {
	if l.recLine == nil {
		return
	}
	if l.rec.name == "" {
		l.recLine.Hide()
		return
	}
	line := l.recLine.Objects[0].(*widget.Label)
	line.Importance = widget.SuccessImportance
	if l.rec.fromDisk { // recommended, but slow here: the from-disk fit line's colour
		line.Importance = widget.WarningImportance
	}
	line.SetText(l.rec.note(true) + ".")
	l.recLine.Show()
}

// showRecommended scrolls the Library to the recommended card.
func (l *LibraryScreen) showRecommended() {
	c := l.byName[l.rec.name]
	scroll, ok := l.content.(*container.Scroll)
	if c == nil || !ok {
		return
	}
	scrollTo(scroll, c.card, 0)
}
