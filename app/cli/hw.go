package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/models"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/fit"
	"github.com/darkroomlabs/darkroom/models/hw"
	"github.com/darkroomlabs/darkroom/models/speed"
	"github.com/darkroomlabs/darkroom/models/store"
)

func init() {
	register(&Command{
		Name:    "hw",
		Summary: "show GPUs, RAM and disk, and which models fit this PC",
		Run:     runHW,
	})
}

// hwReport is `darkroom hw --json` output.
type hwReport struct {
	Hardware hw.Info         `json:"hardware"`
	Context  int             `json:"context_tokens"`
	Fit      []models.FitRow `json:"fit"`
	// Rates are this machine's measured kernel rates (nil on a GPU, or when they
	// could not be measured: RatesProblem says why), and Speed each fit row's
	// estimated tokens/s in both modes, in the same order.
	Rates        *speed.Rates `json:"rates,omitempty"`
	RatesProblem string       `json:"rates_problem,omitempty"`
	Speed        []speedRow   `json:"speed"`
	// Disk is the models folder's disk read rate, measured where a model runs from
	// the disk (fit.FromDisk; its speed rows count the disk's reads), and
	// DiskProblem why it is not where it could not be.
	Disk        *speed.DiskRate `json:"disk,omitempty"`
	DiskProblem string          `json:"disk_problem,omitempty"`
}

// speedRow is one model × profile's speed estimate for a one-canvas answer.
type speedRow struct {
	Model    string          `json:"model"`
	Profile  string          `json:"profile"`
	Estimate *speed.Estimate `json:"estimate"`
	Default  speed.Choice    `json:"default_mode"` // what chat and the API run without a mode
}

func runHW(env *Env, args []string) error {
	fs := newFlagSet(env, "hw", "[flags]")
	var lib libraryFlags
	lib.register(fs, false)
	ctxLen := fs.Int("context", 4096, "context length (tokens) the fit estimates assume")
	asJSON := fs.Bool("json", false, "print hardware and the fit table as JSON")
	again := fs.Bool("recalibrate", false, "measure this PC's speed again, in place of the measurement kept from the first run (taken, perhaps, while something else kept it busy)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return errors.New("hw: takes no arguments")
	}
	if *ctxLen < 1 {
		return fmt.Errorf("--context must be positive, got %d", *ctxLen)
	}
	dir := lib.dir
	if dir == "" {
		dir = store.DefaultDir()
	}
	info := hw.Detect(context.Background(), dir)
	rows, err := models.FitTable(info, *ctxLen)
	if err != nil {
		return err
	}
	rep := hwReport{Hardware: info, Context: *ctxLen, Fit: rows}
	rates, err := ratesNoted(context.Background(), env.Stderr, info.Device, *again)
	if err != nil {
		rep.RatesProblem = err.Error()
	}
	rep.Rates = rates
	if slices.ContainsFunc(rows, fromDisk) && rates != nil {
		whileNoting(env.Stderr, measuringDiskNote, func() {
			d, err := diskHere(context.Background(), dir)
			if err != nil {
				rep.DiskProblem = err.Error()
				return
			}
			rep.Disk = &d
		})
	}
	var diskRate float64
	if rep.Disk != nil {
		diskRate = rep.Disk.BytesPerS
	}
	if rep.Speed, err = speedRows(rows, info.Device, rates, diskRate); err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	w := env.Stdout
	info.Report(w)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Fit at %d tokens of context (fits ≤ 90%% of VRAM / 75%% of RAM; tight up to 100%% / 95%%):\n", *ctxLen)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	head := []string{"MODEL", "PROFILE", "TOTAL"}
	for _, b := range models.Budgets(info) {
		head = append(head, fmt.Sprintf("%s %s", shortName(b.Name), store.FormatBytes(b.Bytes)))
	}
	head = append(head, "RUNS", "WEIGHTS", "KV", "ACTIVATIONS", "DEQUANT", "OVERHEAD", "PRINTER", "POLAROID")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	fromDiskRows := false
	for i, r := range rows {
		cols := []string{r.Model, profileName(r.Model, r.Profile), store.FormatBytes(r.Estimate.Total)}
		for _, v := range r.Verdicts {
			cols = append(cols, fmt.Sprintf("%s (%.0f%%)", v.Verdict, v.Percent))
		}
		cols = append(cols, cmp.Or(r.Where, "?"))
		for _, p := range []string{fit.PartWeights, fit.PartKV, fit.PartActivations, fit.PartDequant, fit.PartOverhead} {
			cols = append(cols, store.FormatBytes(r.Estimate.Part(p)))
		}
		atMost := fromDisk(r) && rep.Disk == nil // its estimate is the in-memory one
		fromDiskRows = fromDiskRows || fromDisk(r)
		cols = append(cols, tokensHere(rep.Speed[i].Estimate, "ar", atMost), tokensHere(rep.Speed[i].Estimate, "diffusion", atMost))
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if fromDiskRows {
		why := "the disk was not measured"
		if rep.DiskProblem != "" {
			why = "the disk could not be measured: " + rep.DiskProblem
		}
		speedNote := "so it writes slower than its speed columns (≤: with the weights in memory; " + why + "), by how fast the disk reads"
		if rep.Disk != nil {
			speedNote = fmt.Sprintf("which its speed columns count, at the %.1f GB/s the models folder's disk read when measured",
				rep.Disk.BytesPerS/1e9)
		}
		fmt.Fprintln(w, "from disk: too big for the RAM, but what must stay in memory (KV cache, activations, the weights converted "+
			"while loading) fits, and at least half of the weights the engine maps from the model's files fit beside it: "+
			"every token reads the rest from the disk again, "+speedNote+"; other programs may respond slowly meanwhile.")
	}
	writeSpeed(w, &rep)
	return nil
}

// profileName is a fit row's profile as the tables show it (catalog.Entry.ProfileName:
// the GGUF download's "Q4_K_M", not the int4 profile its estimate stands on); the
// JSON keeps the profile itself.
func profileName(model, profile string) string {
	if e, ok := catalog.Find(model); ok {
		return e.ProfileName(quant.Profile(profile))
	}
	return profile
}

// speedRows estimates each fit row's tokens/s in both modes on this machine, a row
// that runs from the disk with its reads at diskRate (bytes/s; 0: unknown, and the
// estimate is the in-memory one).
func speedRows(rows []models.FitRow, device string, rates *speed.Rates, diskRate float64) ([]speedRow, error) {
	out := make([]speedRow, 0, len(rows))
	for _, r := range rows {
		e, _ := catalog.Find(r.Model)
		cfg, err := models.EntryConfig(e)
		if err != nil {
			return nil, err
		}
		est := speed.Unknown("the model's dimensions are unknown before download")
		if cfg != nil {
			var d *speed.FromDisk
			for _, v := range r.Verdicts {
				if v.Budget.Kind == "ram" {
					d = speed.DiskFor(r.Estimate, v.Budget, v.Verdict, diskRate)
				}
			}
			if est, err = speed.ForEntryFrom(e, cfg, quant.Profile(r.Profile), device, rates, 0, d); err != nil {
				return nil, err
			}
		}
		out = append(out, speedRow{Model: r.Model, Profile: r.Profile, Estimate: est, Default: speed.Choose(e, est)})
	}
	return out, nil
}

// tokensHere is a table cell: "about N tok/s" ("at most about" for a model that
// runs from the disk, whose estimate is its speed with the weights in memory), or
// "unknown".
func tokensHere(est *speed.Estimate, mode string, fromDisk bool) string {
	if !est.Known() {
		return "unknown"
	}
	m := est.AR
	if mode == "diffusion" {
		m = est.Diffusion
	}
	if fromDisk {
		return "≤~" + speed.Rate(m.TokensPerS) + " tok/s"
	}
	return "~" + speed.Rate(m.TokensPerS) + " tok/s"
}

// fromDisk reports whether a fit row runs from the disk in RAM (fit.FromDisk).
func fromDisk(r models.FitRow) bool {
	for _, v := range r.Verdicts {
		if v.Budget.Kind == "ram" && v.Verdict == fit.FromDisk {
			return true
		}
	}
	return false
}

// writeSpeed says what the PRINTER and POLAROID columns rest on, and each model's
// default mode.
func writeSpeed(w io.Writer, rep *hwReport) {
	fmt.Fprintln(w)
	if rep.Rates == nil {
		why := rep.RatesProblem
		if why == "" {
			why = "Darkroom measures only the CPU's rates, and the model runs on the GPU here"
		}
		fmt.Fprintf(w, "Speed here (PRINTER: AR, one token per forward pass; POLAROID: diffusion): unknown, %s.\n", why)
		return
	}
	r := rep.Rates
	fmt.Fprintf(w, "Speed here, about N tokens/s for a one-canvas answer (PRINTER: AR, one token per forward pass; POLAROID: diffusion),\n")
	fmt.Fprintf(w, "from this CPU's rates measured %s with Darkroom's kernels (each the median of its probes): GEMM up to %.0f GFLOP/s%s (%.0f at [256,64]×[64,64])%s, memory reads %.1f GB/s%s, int4 GEMV %.1f G weights/s%s in the caches and %.1f%s from memory, sampler %.0f M logits/s, a worker's wake-up %.2g µs, the engine's own cost %.2g µs an operation (%.2g in a denoising step), an event's text %.2g ns a token.\n",
		r.Measured.Local().Format("2006-01-02 15:04"), r.Peak()/1e9, spreadText(r, speed.SpreadGEMMPeak, 1e9), r.GEMMAt(256, 64, 64)/1e9, intGEMMText(r),
		r.MemRead/1e9, spreadText(r, speed.SpreadMemRead, 1e9), r.GEMV["int4"]/1e9, spreadText(r, speed.SpreadGEMV+"int4", 1e9),
		r.GEMVStream["int4"]/1e9, spreadText(r, speed.SpreadGEMVStream+"int4", 1e9),
		r.Sampler/1e6, r.Wake*1e6, r.OpOverhead*1e6, r.StepOpOverhead*1e6, r.DecodeToken*1e9)
	seen := map[string]bool{}
	for i, s := range rep.Speed {
		if seen[s.Model] || !s.Estimate.Known() {
			continue
		}
		seen[s.Model] = true
		about := "about"
		if i < len(rep.Fit) && fromDisk(rep.Fit[i]) {
			about = "from the disk, about"
			if rep.Disk == nil {
				about = "at most about" // the in-memory estimate: slower by the disk's reads
			}
		}
		fmt.Fprintf(w, "  %s (%s): printer %s %s tokens/s here, polaroid %s %s; chat and the API use %s.\n", s.Model, profileName(s.Model, s.Profile),
			about, speed.Rate(s.Estimate.AR.TokensPerS), about, speed.Rate(s.Estimate.Diffusion.TokensPerS), s.Default.Reason)
	}
}

// intGEMMText is the integer products' peak, for the rates line: ", int4/int8
// weights up to N in integer arithmetic (AVX-512 VNNI)" where they run (AVX-VNNI and
// AVX2 likewise; AVX2 takes int4 alone), else "".
func intGEMMText(r *speed.Rates) string {
	p := r.IntPeak()
	if p <= 0 {
		return ""
	}
	kernel := map[string]string{"avx512-vnni": "AVX-512 VNNI", "avx-vnni": "AVX-VNNI", "avx2": "AVX2"}[r.IntKernel]
	if kernel == "" {
		kernel = r.IntKernel
	}
	return fmt.Sprintf(", %s weights up to %.0f in integer arithmetic (%s)", strings.Join(r.IntFormats, "/"), p/1e9, kernel)
}

// spreadText is how the probes of rate key (speed.SpreadMemRead, …) in r ranged, in units of unit, as
// " (LO–HI over N probes)"; "" for a rate whose spread was not recorded.
func spreadText(r *speed.Rates, key string, unit float64) string {
	if r == nil {
		return ""
	}
	s, ok := r.Spread[key]
	if !ok || s.N < 2 {
		return ""
	}
	return fmt.Sprintf(" (%.1f–%.1f over %d probes)", s.Lo/unit, s.Hi/unit, s.N)
}

func shortName(s string) string {
	s = strings.TrimPrefix(s, "NVIDIA ")
	s = strings.TrimPrefix(s, "GeForce ")
	return s
}

// ratesHere is this machine's calibration as the commands read it (speed.Here);
// tests replace it (bench's, to see that what the calibration holds is not
// counted as the model's memory).
var ratesHere = speed.Here

// diskHere measures (once) the models folder's disk; a test replaces it.
var diskHere = speed.DiskHere

// ratesAgain is ratesHere measuring again (hw --recalibrate; speed.HereAgain).
var ratesAgain = speed.HereAgain

// measuringNote is what ratesNoted says, measuringAgainNote what hw --recalibrate says.
const (
	measuringNote      = "Measuring this PC's speed for the estimates (only the first time; a few seconds)…"
	measuringDiskNote  = "Measuring how fast the models folder's disk reads, for the models that run from it (only the first time; a few seconds)…"
	measuringAgainNote = "Measuring this PC's speed again (a few seconds; let nothing else run meanwhile)…"
)

// ratesNoted is ratesHere (with again, ratesAgain: hw --recalibrate) that says on w
// what it is doing once it takes a moment: the first run on a machine measures the
// CPU, seconds on a small one.
func ratesNoted(ctx context.Context, w io.Writer, device string, again bool) (r *speed.Rates, err error) {
	measure, note := ratesHere, measuringNote
	if again {
		measure, note = ratesAgain, measuringAgainNote
	}
	whileNoting(w, note, func() { r, err = measure(ctx, device) })
	return r, err
}
