package assets

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
)

// MiniCardFile is the built-in model's card in assets/mini/, beside its weights.
const MiniCardFile = "card.json"

// MiniCard is what Darkroom says about the built-in model that its files cannot
// tell: what it was trained on and how a canvas of it typically runs. Its size,
// parameters and dtype are not here: the catalog reads them from the model's own
// files (models/catalog.MiniFacts), so they cannot go stale. packaging/ship-mini.sh
// writes the card with the weights, from the training run and a `darkroom bench`.
type MiniCard struct {
	// TrainedOn names the training sources as the app's sentences use them:
	// "FOLDOC and the Jargon File".
	TrainedOn string `json:"trained_on"`
	// License is the catalog's licence line: the training data's and the weights'.
	License string `json:"license"`
	// Steps and GuidanceRounds are the denoising steps and AR guidance rounds a
	// canvas takes on the bench prompt (`darkroom bench`'s steps_per_canvas and
	// guidance_rounds_per_canvas), for the speed estimate.
	Steps          float64 `json:"typical_steps"`
	GuidanceRounds float64 `json:"typical_guidance_rounds"`
	// ChatMode is the mode the model's chats, API answers and encyclopedia pages
	// run in when the user picks none — "ar" where its printer's answers and
	// pages were measured to read better than its polaroid's
	// (assets/training/README.md says how; the name is from when it was chats'
	// alone) — and
	// ChatModeWhy the reason the app shows for it. "" is diffusion, the mode
	// Darkroom's models are made for; packaging/ship-mini.sh writes a card
	// without it, so each model is measured before it says otherwise.
	ChatMode    string `json:"chat_mode,omitempty"`
	ChatModeWhy string `json:"chat_mode_why,omitempty"`
}

// ReadMiniCard returns the embedded model's card. It wraps ErrMiniNotBuilt when
// the binary carries no model, and names what is missing when the card is absent
// or incomplete.
func ReadMiniCard() (MiniCard, error) {
	fsys, err := Mini()
	if err != nil {
		return MiniCard{}, err
	}
	return readMiniCard(fsys)
}

func readMiniCard(fsys fs.FS) (MiniCard, error) {
	var c MiniCard
	b, err := fs.ReadFile(fsys, MiniCardFile)
	if errors.Is(err, fs.ErrNotExist) {
		return c, fmt.Errorf("embedded Darkroom Mini has no %s (packaging/ship-mini.sh writes it with the weights)", MiniCardFile)
	}
	if err != nil {
		return c, fmt.Errorf("read embedded Darkroom Mini %s: %w", MiniCardFile, err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("embedded Darkroom Mini %s: %w", MiniCardFile, err)
	}
	switch {
	case c.TrainedOn == "":
		return c, fmt.Errorf("embedded Darkroom Mini %s: trained_on is empty", MiniCardFile)
	case c.License == "":
		return c, fmt.Errorf("embedded Darkroom Mini %s: license is empty", MiniCardFile)
	case c.Steps <= 0 || c.GuidanceRounds < 0:
		return c, fmt.Errorf("embedded Darkroom Mini %s: typical_steps %g and typical_guidance_rounds %g must be positive",
			MiniCardFile, c.Steps, c.GuidanceRounds)
	case c.ChatMode != "" && c.ChatMode != "ar" && c.ChatMode != "diffusion":
		return c, fmt.Errorf("embedded Darkroom Mini %s: chat_mode %q is neither \"ar\" nor \"diffusion\"", MiniCardFile, c.ChatMode)
	case c.ChatMode != "" && c.ChatModeWhy == "":
		return c, fmt.Errorf("embedded Darkroom Mini %s: chat_mode %q without chat_mode_why, the reason the app shows", MiniCardFile, c.ChatMode)
	}
	return c, nil
}
