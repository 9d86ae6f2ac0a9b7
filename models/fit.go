package models

import (
	"errors"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/fit"
	"github.com/darkroomlabs/darkroom/models/hw"
)

// Judgement is an estimate judged against one budget.
type Judgement struct {
	Budget  fit.Budget  `json:"budget"`
	Verdict fit.Verdict `json:"verdict"`
	Percent float64     `json:"percent"` // estimate as a share of the budget
}

// FitRow is one model × profile of the fit table.
type FitRow struct {
	Model    string        `json:"model"`
	Profile  string        `json:"profile"`
	Estimate *fit.Estimate `json:"estimate"`
	Verdicts []Judgement   `json:"verdicts"` // one per GPU, then RAM
	// Where says where auto runs it on this PC (Placement.Where: on the GPU, split
	// between the GPU and the CPU — "16 of 30 layers on the GPU" —, on the CPU), ""
	// where it cannot be placed (the PC's memory unknown).
	Where string `json:"where,omitempty"`
}

// Budgets are the memories of this machine an estimate is judged against: each
// GPU's VRAM, then the RAM.
func Budgets(info hw.Info) []fit.Budget {
	var out []fit.Budget
	for _, g := range info.GPUs {
		out = append(out, fit.Budget{Kind: "gpu", Name: g.Name, Bytes: g.VRAMTotal})
	}
	if info.RAMTotal > 0 {
		out = append(out, fit.Budget{Kind: "ram", Name: "RAM", Bytes: info.RAMTotal})
	}
	return out
}

// FitTable estimates every catalog model (with known dimensions) under every
// profile at contextLen tokens, judges each against the budgets of the PC info
// describes (Budgets) and says where it runs there (Place).
func FitTable(info hw.Info, contextLen int) ([]FitRow, error) {
	budgets := Budgets(info)
	var rows []FitRow
	gpu := false
	for _, b := range budgets {
		gpu = gpu || b.Kind == "gpu"
	}
	for _, e := range catalog.Entries() {
		cfg, err := entryConfig(e)
		if errors.Is(err, assets.ErrMiniNotBuilt) {
			continue // a binary built before the model was trained
		}
		if err != nil {
			return nil, err
		}
		if cfg == nil {
			continue
		}
		for _, p := range e.Profiles {
			est, err := fit.Compute(cfg, p, fit.Runtime{Context: contextLen, GPU: gpu, GGUF: weights.MixLayout(e.Mix)})
			if err != nil {
				return nil, err
			}
			row := FitRow{Model: e.ID, Profile: string(p), Estimate: est}
			if pl, err := place(cfg, p, fit.Runtime{Context: contextLen, GGUF: weights.MixLayout(e.Mix)}, info); err == nil {
				row.Where = pl.Where()
			}
			for _, b := range budgets {
				j := Judgement{Budget: b, Verdict: fit.JudgeEstimate(est, b)}
				if b.Bytes > 0 {
					j.Percent = 100 * float64(est.Total) / float64(b.Bytes)
				}
				row.Verdicts = append(row.Verdicts, j)
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// EntryConfig is a catalog entry's dimensions: the built-in model's config, or
// the entry's own (nil when only known after download).
func EntryConfig(e catalog.Entry) (*config.Model, error) { return entryConfig(e) }

func entryConfig(e catalog.Entry) (*config.Model, error) {
	if e.Builtin {
		fsys, err := assets.Mini()
		if err != nil {
			return nil, err
		}
		return config.LoadFS(fsys, ".")
	}
	if e.Config == nil {
		return nil, nil
	}
	return e.Config()
}
