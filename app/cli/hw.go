package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/darkroomlabs/darkroom/engine/backend"
	"github.com/darkroomlabs/darkroom/models"
	"github.com/darkroomlabs/darkroom/models/fit"
	"github.com/darkroomlabs/darkroom/models/hw"
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
}

func runHW(env *Env, args []string) error {
	fs := newFlagSet(env, "hw", "[flags]")
	var lib libraryFlags
	lib.register(fs, false)
	ctxLen := fs.Int("context", 4096, "context length (tokens) the fit estimates assume")
	asJSON := fs.Bool("json", false, "print hardware and the fit table as JSON")
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
	rows, err := models.FitTable(models.Budgets(info), *ctxLen)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(hwReport{Hardware: info, Context: *ctxLen, Fit: rows})
	}
	w := env.Stdout
	fmt.Fprintln(w, info.Summary)
	for _, g := range info.GPUs {
		fmt.Fprintf(w, "GPU %d: %s, %s VRAM (%s free), driver %s, compute %s [%s]\n", g.Index, g.Name,
			store.FormatBytes(g.VRAMTotal), store.FormatBytes(g.VRAMFree), g.Driver, g.ComputeCapability, g.Source)
	}
	fmt.Fprintf(w, "RAM: %s (%s available), %d CPU cores, %s/%s\n", store.FormatBytes(info.RAMTotal),
		store.FormatBytes(info.RAMAvailable), info.CPUs, info.OS, info.Arch)
	fmt.Fprintf(w, "Models folder: %s (%s free)\n", info.StoreDir, store.FormatBytes(info.DiskFree))
	writeBackend(w, info)
	fmt.Fprintf(w, "Fit at %d tokens of context (fits ≤ 90%% of VRAM / 75%% of RAM; tight up to 100%% / 95%%):\n", *ctxLen)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	head := []string{"MODEL", "PROFILE", "TOTAL"}
	for _, b := range models.Budgets(info) {
		head = append(head, fmt.Sprintf("%s %s", shortName(b.Name), store.FormatBytes(b.Bytes)))
	}
	head = append(head, "WEIGHTS", "KV", "ACTIVATIONS", "DEQUANT", "OVERHEAD")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range rows {
		cols := []string{r.Model, r.Profile, store.FormatBytes(r.Estimate.Total)}
		for _, v := range r.Verdicts {
			cols = append(cols, fmt.Sprintf("%s (%.0f%%)", v.Verdict, v.Percent))
		}
		for _, p := range []string{fit.PartWeights, fit.PartKV, fit.PartActivations, fit.PartDequant, fit.PartOverhead} {
			cols = append(cols, store.FormatBytes(r.Estimate.Part(p)))
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	return tw.Flush()
}

// writeBackend says what runs and which PJRT plugins were found where.
func writeBackend(w io.Writer, info hw.Info) {
	fmt.Fprintf(w, "Backend: %s (%s)\n", info.Backend, info.Device)
	rt := backend.Runtime()
	state := "not installed (`darkroom gpu install`)"
	if rt.Installed() {
		state = "installed"
	}
	fmt.Fprintf(w, "Darkroom's GPU support: %s, %s\n", state, rt.Dir)
	if len(info.Plugins) == 0 {
		fmt.Fprintln(w, "PJRT plugins: none found (looked in PJRT_PLUGIN_LIBRARY_PATH, Darkroom's runtime folder, go-xla's folders and JAX installations)")
	} else {
		fmt.Fprintln(w, "PJRT plugins:")
	}
	for _, p := range info.Plugins {
		fmt.Fprintf(w, "  %-5s %s (%s)\n", p.Name, p.Path, p.From)
	}
	fmt.Fprintln(w)
}

func shortName(s string) string {
	s = strings.TrimPrefix(s, "NVIDIA ")
	s = strings.TrimPrefix(s, "GeForce ")
	return s
}
