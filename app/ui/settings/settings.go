// Package settings is the desktop app's typed settings: every key with its default
// and bounds in one place, stored as JSON in $XDG_CONFIG_HOME/darkroom/settings.json
// (not Fyne Preferences, which roam on Windows). Values read from disk are clamped
// to their bounds, so a hand-edited or damaged file never yields odd values.
package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/adrg/xdg"
	"github.com/darkroomlabs/darkroom/engine/atomicfile"
)

// Sampling overrides the model's generation defaults; a zero field means "use the
// model's default" (engine.Sampling has the same convention).
type Sampling struct {
	MaxNewTokens        int     `json:"max_new_tokens,omitempty"`
	MaxSteps            int     `json:"max_steps,omitempty"`
	TMin                float64 `json:"t_min,omitempty"`
	TMax                float64 `json:"t_max,omitempty"`
	EntropyBound        float64 `json:"entropy_bound,omitempty"`
	ConfidenceThreshold float64 `json:"confidence_threshold,omitempty"`
	StabilityThreshold  int     `json:"stability_threshold,omitempty"`
	Temperature         float64 `json:"temperature,omitempty"`        // AR mode
	RepetitionPenalty   float64 `json:"repetition_penalty,omitempty"` // AR mode; 1 = off
	Guidance            float64 `json:"guidance,omitempty"`           // AR guidance weight; negative = off
	GuidanceRounds      int     `json:"guidance_rounds,omitempty"`
	GuidanceInWord      float64 `json:"guidance_in_word,omitempty"` // inside words; negative = Guidance there too
}

// Values are all settings.
type Values struct {
	Backend string `json:"backend"` // "auto", "go" or "xla"
	// GPULayers is how many of a model's layers run on the GPU where it is split
	// with the CPU, as LM Studio's GPU offload and llama.cpp's --n-gpu-layers: 0
	// (auto) as many as fit (models.BackendFor), N the first N (a model of N layers
	// or fewer runs all on the GPU). The pure-Go backend runs all on the CPU.
	GPULayers     int      `json:"gpu_layers,omitempty"`
	Theme         string   `json:"theme"` // "system", "dark" or "light"
	ServerEnabled bool     `json:"server_enabled"`
	FirstRunDone  bool     `json:"first_run_done"`
	Sampling      Sampling `json:"sampling"`
	Seed          uint64   `json:"seed"` // 0 = a new seed per generation
	LastTopic     string   `json:"last_topic,omitempty"`
	// PageMode is the mode the Encyclopedia writes pages in: "diffusion" (the
	// polaroid), "ar" (the printer), or "" for the model's own choice (the mode
	// its writing reads best in, or the faster one here where both read alike).
	PageMode string `json:"page_mode,omitempty"`
	// Hugging Face access for downloads. The token is kept in this file in plain
	// text (the Library says so); HF_TOKEN / HF_ENDPOINT apply when these are empty.
	HFToken  string `json:"hf_token,omitempty"`
	HFMirror string `json:"hf_mirror,omitempty"`
	// ModelsDir is where the Library keeps models ("" = the default under
	// $XDG_DATA_HOME; DARKROOM_MODELS_DIR overrides both).
	ModelsDir string `json:"models_dir,omitempty"`
	// ServerPort is the local server's port on 127.0.0.1 (0 = a random free
	// port at each start; see ServerPortBound).
	ServerPort int `json:"server_port,omitempty"`
	// ServerOrigins are the web pages allowed to call the local server's API from
	// a browser, by origin ("http://localhost:3000"; app/server.ParseOrigins).
	ServerOrigins []string `json:"server_origins,omitempty"`
	// RemoteServers are the OpenAI-compatible servers the Library added. Their
	// keys are kept in this file in plain text (readable by this user only), as
	// the HF token is; they are never logged.
	RemoteServers []RemoteServer `json:"remote_servers,omitempty"`
	// RemoteModel, if set, is the active model, on one of RemoteServers; the
	// Library's local choice applies otherwise.
	RemoteModel *RemoteModel `json:"remote_model,omitempty"`
	// PagePrompt and DesktopPrompt are the user's own prompts for the
	// Encyclopedia's pages (a template with {{title}}: assets.PagePrompt) and the
	// Desktop's system turn; "" is the built-in one.
	PagePrompt    string `json:"page_prompt,omitempty"`
	DesktopPrompt string `json:"desktop_prompt,omitempty"`
	// WindowWidth and WindowHeight are the main window's size when it was last
	// closed (0: never), which it opens at.
	WindowWidth  float32 `json:"window_width,omitempty"`
	WindowHeight float32 `json:"window_height,omitempty"`
	// TextScale is the size of everything in the window — text, icons, spacing —
	// in percent of Fyne's own (0 is 100): one of TextScales (Settings' Text
	// size; Ctrl+= and Ctrl+− step it, Ctrl+0 puts it back, as a browser zooms).
	TextScale int `json:"text_scale,omitempty"`
}

// RemoteServer is an OpenAI-compatible server: its base URL and API key.
type RemoteServer struct {
	URL string `json:"url"`
	Key string `json:"key,omitempty"`
}

// RemoteModel is a model of a remote server, as /v1/models lists it.
type RemoteModel struct {
	URL     string `json:"url"` // the server's, as in RemoteServers
	ID      string `json:"id"`
	OwnedBy string `json:"owned_by,omitempty"`
}

// RemoteServer returns the added server with base URL u.
func (v Values) RemoteServer(u string) (RemoteServer, bool) {
	for _, s := range v.RemoteServers {
		if s.URL == u {
			return s, true
		}
	}
	return RemoteServer{}, false
}

// Bound is the range of one numeric setting (for validation and the Settings UI).
type Bound struct {
	Key      string
	Label    string
	Min, Max float64
	Step     float64
	Int      bool
}

// ServerPortBound is the range of a fixed server port (0, the default, is
// allowed besides it: a random port). Ports below 1024 need privileges.
var ServerPortBound = Bound{Key: "server_port", Label: "Port (empty: a random free port)", Min: 1024, Max: 65535, Step: 1, Int: true}

// MaxGPULayers bounds Values.GPULayers (the 26B has 30 layers).
const MaxGPULayers = 1000

// Choices of the enumerated settings; the first is the default.
var (
	BackendChoices = []string{"auto", "go", "xla"}
	ThemeChoices   = []string{"system", "dark", "light"}
	// TextScales are the text sizes offered, in percent, smallest first: a
	// browser's zoom steps, from one that fits more on a small laptop screen to
	// one that reads from a sofa.
	TextScales = []int{80, 90, 100, 110, 125, 150}
)

// Scale is TextScale as the factor the window's sizes are multiplied by.
func (v Values) Scale() float32 {
	if v.TextScale == 0 {
		return 1
	}
	return float32(v.TextScale) / 100
}

// StepTextScale is the text size one step larger (up) or smaller than
// percent among TextScales, or percent itself at either end; a size between
// two steps (a settings file written by hand) goes to the next one.
func StepTextScale(percent int, up bool) int {
	if percent == 0 {
		percent = 100
	}
	if up {
		for _, p := range TextScales {
			if p > percent {
				return p
			}
		}
	} else {
		for i := len(TextScales) - 1; i >= 0; i-- {
			if TextScales[i] < percent {
				return TextScales[i]
			}
		}
	}
	return percent
}

// SamplingBounds lists the sampling knobs in display order. Zero always means
// "the model's default" and is allowed besides the range.
var SamplingBounds = []Bound{
	{Key: "max_new_tokens", Label: "Max new tokens", Min: 16, Max: 8192, Step: 16, Int: true},
	{Key: "max_steps", Label: "Max denoising steps per canvas", Min: 1, Max: 256, Step: 1, Int: true},
	{Key: "t_max", Label: "Temperature at the first step", Min: 0.05, Max: 2, Step: 0.05},
	{Key: "t_min", Label: "Temperature at the last step", Min: 0.05, Max: 2, Step: 0.05},
	{Key: "entropy_bound", Label: "Entropy bound (acceptance per step)", Min: 0.001, Max: 100, Step: 0.01},
	{Key: "confidence_threshold", Label: "Confidence threshold (stop)", Min: 0.0001, Max: 5, Step: 0.01},
	{Key: "stability_threshold", Label: "Stable steps before stopping", Min: 1, Max: 64, Step: 1, Int: true},
	{Key: "temperature", Label: "AR temperature (0 = greedy)", Min: 0, Max: 2, Step: 0.05},
	{Key: "repetition_penalty", Label: "AR repetition penalty (1 = off; above 1 the printer repeats itself less)", Min: 0.5, Max: 2, Step: 0.05},
	{Key: "guidance", Label: "AR guidance of the words (weight, −1 = off)", Min: -1, Max: 10, Step: 0.25},
	{Key: "guidance_rounds", Label: "AR guidance rounds per canvas", Min: 1, Max: 64, Step: 1, Int: true},
	{Key: "guidance_in_word", Label: "AR guidance of spelling, inside words (weight, −1 = as above)", Min: -1, Max: 20, Step: 0.5},
}

// Defaults returns the settings of a fresh install.
func Defaults() Values {
	return Values{Backend: "auto", Theme: "system"}
}

// knob returns the field behind a sampling key: exactly one of f and i is set,
// or neither for an unknown key.
func (s *Sampling) knob(key string) (f *float64, i *int) {
	switch key {
	case "max_new_tokens":
		return nil, &s.MaxNewTokens
	case "max_steps":
		return nil, &s.MaxSteps
	case "t_min":
		return &s.TMin, nil
	case "t_max":
		return &s.TMax, nil
	case "entropy_bound":
		return &s.EntropyBound, nil
	case "confidence_threshold":
		return &s.ConfidenceThreshold, nil
	case "stability_threshold":
		return nil, &s.StabilityThreshold
	case "temperature":
		return &s.Temperature, nil
	case "repetition_penalty":
		return &s.RepetitionPenalty, nil
	case "guidance":
		return &s.Guidance, nil
	case "guidance_rounds":
		return nil, &s.GuidanceRounds
	case "guidance_in_word":
		return &s.GuidanceInWord, nil
	}
	return nil, nil
}

// Get returns a sampling knob by key.
func (s Sampling) Get(key string) float64 {
	switch f, i := s.knob(key); {
	case f != nil:
		return *f
	case i != nil:
		return float64(*i)
	}
	return 0
}

// Set sets a sampling knob by key, clamped to its bound (0 stays 0: model default).
func (s *Sampling) Set(key string, v float64) {
	for _, b := range SamplingBounds {
		if b.Key == key && v != 0 {
			v = min(max(v, b.Min), b.Max)
		}
	}
	switch f, i := s.knob(key); {
	case f != nil:
		*f = v
	case i != nil:
		*i = int(v)
	}
}

// clamp puts every value in range.
func (v *Values) clamp() {
	if !contains(BackendChoices, v.Backend) {
		v.Backend = BackendChoices[0]
	}
	if v.GPULayers < 0 || v.GPULayers > MaxGPULayers {
		v.GPULayers = 0 // auto
	}
	if !contains(ThemeChoices, v.Theme) {
		v.Theme = ThemeChoices[0]
	}
	if v.TextScale != 0 && !slices.Contains(TextScales, v.TextScale) {
		v.TextScale = nearestScale(v.TextScale)
	}
	if v.PageMode != "diffusion" && v.PageMode != "ar" {
		v.PageMode = "" // the model's choice
	}
	servers := v.RemoteServers[:0:0]
	for _, s := range v.RemoteServers {
		if _, dup := (Values{RemoteServers: servers}).RemoteServer(s.URL); s.URL != "" && !dup {
			servers = append(servers, s)
		}
	}
	v.RemoteServers = servers
	if r := v.RemoteModel; r != nil {
		if _, ok := v.RemoteServer(r.URL); !ok || r.ID == "" {
			v.RemoteModel = nil // its server was removed
		}
	}
	if p := float64(v.ServerPort); p != 0 && (p < ServerPortBound.Min || p > ServerPortBound.Max) {
		v.ServerPort = 0
	}
	for _, b := range SamplingBounds {
		x := v.Sampling.Get(b.Key)
		if x < 0 && b.Min >= 0 { // a knob without a negative range: the model's default
			x = 0
		}
		v.Sampling.Set(b.Key, x)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Store holds the current values and writes them back on every change.
type Store struct {
	path string
	mu   sync.Mutex
	v    Values
}

// DefaultPath is $XDG_CONFIG_HOME/darkroom/settings.json.
func DefaultPath() string { return filepath.Join(xdg.ConfigHome, "darkroom", "settings.json") }

// Open loads the settings at path (DefaultPath when empty). A missing file gives
// the defaults; an unreadable one gives the defaults and an error to show.
func Open(path string) (*Store, error) {
	if path == "" {
		path = DefaultPath()
	}
	s := &Store{path: path, v: Defaults()}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("read settings %s: %w", path, err)
	}
	v := Defaults()
	if err := json.Unmarshal(data, &v); err != nil {
		return s, fmt.Errorf("settings file %s is damaged, using defaults: %w", path, err)
	}
	v.clamp()
	s.v = v
	return s, nil
}

// Path is where the settings live.
func (s *Store) Path() string { return s.path }

// Get returns a copy of the current values.
func (s *Store) Get() Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.v.clone()
}

// clone copies v's slices and pointers, so a caller's changes stay its own.
func (v Values) clone() Values {
	v.RemoteServers = slices.Clone(v.RemoteServers)
	if v.RemoteModel != nil {
		r := *v.RemoteModel
		v.RemoteModel = &r
	}
	return v
}

// Update changes the values with fn, clamps them and saves atomically.
func (s *Store) Update(fn func(*Values)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.v.clone()
	fn(&v)
	v.clamp()
	s.v = v
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return fmt.Errorf("save settings: %w", err)
	}
	if err := atomicfile.WriteFile(s.path, data, 0o600); err != nil {
		return fmt.Errorf("save settings %s: %w", s.path, err)
	}
	return nil
}

// nearestScale is the one of TextScales nearest percent (a hand-written 300 is
// the largest, 10 the smallest).
func nearestScale(percent int) int {
	best := TextScales[0]
	for _, p := range TextScales {
		if abs(p-percent) < abs(best-percent) {
			best = p
		}
	}
	return best
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
