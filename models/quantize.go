package models

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/convert"
	"github.com/darkroomlabs/darkroom/models/download"
	"github.com/darkroomlabs/darkroom/models/store"
)

// QuantizeOptions tune Manager.Quantize.
type QuantizeOptions struct {
	Profile  quant.Profile
	Out      string // output folder; "" = the store, named "<model>-<profile>"
	Progress func(convert.Progress)
}

// Quantize converts a model (catalog name, local name or folder; it must be
// verified) into a profile. Without Out the result goes into the store as a local
// model named "<model>-<profile>" (e.g. "diffusiongemma-26b-int4") with a manifest
// listing every file's sha256, so Resolve and the library treat it like a download.
// It returns the model's name (or Out) and folder.
func (m *Manager) Quantize(ctx context.Context, nameOrDir string, opt QuantizeOptions) (name, dir string, err error) {
	release, err := m.holdStore("convert " + nameOrDir) // it reads and writes the models folder
	if err != nil {
		return "", "", err
	}
	defer release()
	var src convert.Source
	base := ""
	d, rerr := m.Resolve(nameOrDir)
	switch {
	case errors.Is(rerr, ErrBuiltin):
		fsys, err := assets.Mini()
		if err != nil {
			return "", "", err
		}
		src, base = convert.Source{FS: fsys}, catalog.MiniID
	case rerr != nil:
		return "", "", rerr
	default:
		src = convert.Source{Dir: d}
		if e, ok := catalog.Find(nameOrDir); ok {
			base = e.ID
		} else if man, err := store.ReadManifest(d); err == nil {
			base = man.Name
		} else {
			base = filepath.Base(d)
		}
	}
	if opt.Out != "" {
		out, err := filepath.Abs(opt.Out)
		if err != nil {
			return "", "", err
		}
		if _, err := convert.Quantize(ctx, src, out, convert.Options{Profile: opt.Profile, Progress: opt.Progress}); err != nil {
			return "", "", err
		}
		return out, out, nil
	}
	name = strings.TrimSuffix(base, "-bf16") + "-" + string(opt.Profile)
	unhold, err := m.store.Hold(name, "converting a model into it") // two writers of one folder
	if err != nil {
		return "", "", fmt.Errorf("quantize: %w", err)
	}
	defer unhold()
	dir = m.store.ModelDir(name)
	if _, err := os.Stat(dir); err == nil {
		return "", "", fmt.Errorf("quantize: %s already exists in %s (`darkroom rm %s` first)", name, m.store.Root, name)
	}
	res, err := convert.Quantize(ctx, src, dir, convert.Options{Profile: opt.Profile, Progress: opt.Progress})
	if err != nil {
		return "", "", err
	}
	man := &store.Manifest{Name: name, Source: "quantize", Profile: string(opt.Profile), BaseOf: base, State: store.StateComplete}
	err = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		st, err := e.Info()
		if err != nil {
			return err
		}
		sum, err := download.HashFile(p)
		if err != nil {
			return err
		}
		man.Files = append(man.Files, store.File{Name: filepath.ToSlash(rel), Size: st.Size(), SHA256: sum, State: store.FileComplete})
		return nil
	})
	if err == nil {
		err = m.store.Save(man)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", "", fmt.Errorf("quantize: %w", err)
	}
	_ = res
	return name, dir, nil
}
