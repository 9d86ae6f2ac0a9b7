package models

import (
	"errors"
	"fmt"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/models/catalog"
)

// Source is Resolve for engine.Load: it also returns the built-in Darkroom Mini
// (from package assets). `darkroom generate --model NAME` calls it.
func Source(nameOrDir string) (engine.Source, error) {
	m, err := New(Options{})
	if err != nil {
		return engine.Source{}, err
	}
	return m.Source(nameOrDir)
}

// Source resolves nameOrDir (see Resolve) into something engine.Load accepts.
func (m *Manager) Source(nameOrDir string) (engine.Source, error) {
	dir, err := m.Resolve(nameOrDir)
	if errors.Is(err, ErrBuiltin) {
		fsys, err := assets.Mini()
		if err != nil {
			return engine.Source{}, fmt.Errorf("%s: %w", catalog.MiniID, err)
		}
		return engine.FS(fsys, catalog.MiniID), nil
	}
	if err != nil {
		return engine.Source{}, err
	}
	return engine.Dir(dir), nil
}

// Leads reads the leads src's folder holds (assets.Leads: each entry's first
// sentence, which an encyclopedia page holds after a known title's heading; nil
// for most models). A damaged file is an error naming it and how to go on, not a
// model without its leads unsaid.
func Leads(src engine.Source) (*assets.Leads, error) {
	fsys, err := src.Files()
	if err != nil {
		return nil, err
	}
	leads, err := assets.ReadLeads(fsys)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (remove that file to use the model without it)", src, err)
	}
	return leads, nil
}
