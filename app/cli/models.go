package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/darkroomlabs/darkroom/models"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/store"
)

func init() {
	register(&Command{
		Name:    "models",
		Summary: "list the model catalog and the downloaded models",
		Run:     runModels,
	})
}

// modelsList is `darkroom models --json` output.
type modelsList struct {
	ModelsDir   string                `json:"models_dir"`
	FreeBytes   int64                 `json:"free_bytes"`
	Active      string                `json:"active,omitempty"`
	Models      []models.Entry        `json:"models"`
	Unsupported []catalog.Unsupported `json:"unsupported_formats"`
}

func runModels(env *Env, args []string) error {
	fs := newFlagSet(env, "models", "[flags]")
	var lib libraryFlags
	lib.register(fs, false)
	asJSON := fs.Bool("json", false, "print the list as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return errors.New("models: takes no arguments")
	}
	m, err := lib.open()
	if err != nil {
		return err
	}
	ents, err := m.Entries()
	if err != nil {
		return err
	}
	free, _ := m.FreeSpace()
	active, _ := m.Active()
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(modelsList{ModelsDir: m.StorePath(), FreeBytes: free, Active: active, Models: ents,
			Unsupported: catalog.UnsupportedFormats()})
	}
	tw := tabwriter.NewWriter(env.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tSIZE\tFORMAT\tACTIVE")
	for _, e := range ents {
		size := e.Size
		if e.Local != nil {
			size = e.Local.TotalSize()
		}
		sz := "-"
		if size > 0 {
			sz = store.FormatBytes(size)
		}
		act := ""
		if e.Active {
			act = "*"
		}
		state := e.State
		if e.State == models.StateElsewhere && e.Progress != nil {
			state = "in use by another Darkroom, " + e.Progress.Message
		} else if e.Local != nil && e.Local.Error != "" && e.Local.State != store.StateComplete {
			state += " (" + firstLine(e.Local.Error) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.ID, state, sz, e.Format, act)
		for _, d := range e.Derived {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.Name, d.State, store.FormatBytes(d.TotalSize()), "safetensors ("+d.Profile+")",
				map[bool]string{true: "*"}[active == d.Name])
		}
	}
	tw.Flush()
	fmt.Fprintf(env.Stdout, "\nModels folder: %s (%s free)\n", m.StorePath(), store.FormatBytes(free))
	if unsupported := catalog.UnsupportedFormats(); len(unsupported) > 0 {
		fmt.Fprintln(env.Stdout, "Not supported yet:")
		for _, u := range unsupported {
			fmt.Fprintf(env.Stdout, "  %s (%s)\n", u.Repo, u.Format)
		}
	}
	return nil
}

func firstLine(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
