package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/darkroomlabs/darkroom/app/plural"
	"github.com/darkroomlabs/darkroom/models"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/download"
	"github.com/darkroomlabs/darkroom/models/hub"
	"github.com/darkroomlabs/darkroom/models/hw"
	"github.com/darkroomlabs/darkroom/models/store"
)

// pullName is what `darkroom pull` was given, as the models manager takes
// it: a catalog name, or a repo — owner/name, or the model's page address
// copied from a browser (hub.ParseRepo). Anything else is refused before the
// hub is asked, naming the catalog's names: the hub's own words would be only
// that it is not a repo name.
func pullName(name string) (string, error) {
	if _, ok := catalog.Find(name); ok {
		return name, nil
	}
	if strings.Contains(name, "/") { // owner/name, or the model's page address copied from a browser
		repo, err := hub.ParseRepo(name)
		if err != nil {
			return "", fmt.Errorf("pull: %w", err)
		}
		return repo, nil
	}
	var ids []string
	example := ""
	for _, e := range catalog.Entries() {
		if !e.Builtin {
			ids = append(ids, e.ID)
			if example == "" {
				example = e.Repo
			}
		}
	}
	return "", fmt.Errorf("pull %s: %q is neither a catalog name (%s; `darkroom models` lists them) nor a Hugging Face repo (owner/name, e.g. %s)",
		name, name, strings.Join(ids, ", "), example)
}

func init() {
	register(&Command{
		Name:    "pull",
		Summary: "download a model from Hugging Face (resumable, verified)",
		Run:     runPull,
	})
}

// libraryFlags are the flags of the commands that open the models library.
type libraryFlags struct {
	dir, endpoint, token string
}

func (l *libraryFlags) register(fs interface {
	StringVar(*string, string, string, string)
}, hub bool) {
	fs.StringVar(&l.dir, "models-dir", "", "models folder (default $DARKROOM_MODELS_DIR, else $XDG_DATA_HOME/darkroom/models)")
	if hub {
		fs.StringVar(&l.endpoint, "endpoint", "", "Hugging Face endpoint or mirror (default $HF_ENDPOINT, else https://huggingface.co)")
		fs.StringVar(&l.token, "token", "", "Hugging Face access token for gated models (default $HF_TOKEN)")
	}
}

func (l *libraryFlags) open() (*models.Manager, error) {
	return models.New(models.Options{Dir: l.dir, Endpoint: l.endpoint, Token: l.token})
}

func runPull(env *Env, args []string) error {
	fs := newFlagSet(env, "pull", "[flags] REPO|REPO:QUANT|NAME")
	var lib libraryFlags
	lib.register(fs, true)
	rev := fs.String("revision", "", "branch, tag or commit (default main)")
	include := fs.String("include", "", "comma-separated globs of files to fetch (default: the catalog's choice, else all)")
	asJSON := fs.Bool("json", false, "print the finished model's manifest as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("pull: give one repo (owner/name; owner/name:QUANT for one quantization of a GGUF repo) or catalog name, e.g. `darkroom pull diffusiongemma-26b`")
	}
	name, err := pullName(fs.Arg(0))
	if err != nil {
		return err
	}
	m, err := lib.open()
	if err != nil {
		return err
	}
	var globs []string
	for _, g := range strings.Split(*include, ",") {
		if g = strings.TrimSpace(g); g != "" {
			globs = append(globs, g)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	bar := newProgress(env.Stderr)
	unsub := m.Subscribe(bar.event)
	defer unsub()
	tr, err := m.Pull(ctx, name, models.PullOptions{Revision: *rev, Include: globs})
	if err != nil {
		if hub.Unreachable(err) && ctx.Err() == nil {
			return unreachableHub(name, m.Hub().Endpoint, "", err)
		}
		var choice *models.QuantChoice
		if errors.As(err, &choice) { // each quantization said with where it would run here
			models.JudgeQuants(choice, hw.Detect(ctx, m.StorePath()))
		}
		return err
	}
	err = tr.Wait()
	bar.finish()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("pull %s: interrupted; the partial files are kept — run the same command again to resume", name)
		}
		if hub.Unreachable(err) {
			return unreachableHub(name, m.Hub().Endpoint, "; the partial files are kept, so the same command resumes", err)
		}
		if errors.Is(err, download.ErrNoSpace) {
			free, _ := m.FreeSpace()
			return fmt.Errorf("pull %s: %v (free now: %s in %s)", name, err, store.FormatBytes(free), m.StorePath())
		}
		return fmt.Errorf("pull %s: %w", name, err)
	}
	man, err := m.Store().Load(tr.Name())
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(man)
	}
	fmt.Fprintf(env.Stdout, "%s: %s, %s, verified, in %s\n", man.Name, plural.Count(len(man.Files), "file", "files"),
		store.FormatBytes(man.TotalSize()), m.Store().ModelDir(man.Name))
	return nil
}

// unreachableHub says what to do when the hub was never reached (no network, a
// mirror that is down), then the system's own words for it, without the chain
// of what was being fetched that wraps them.
func unreachableHub(name, endpoint, kept string, err error) error {
	cause := err.Error()
	var uerr *url.Error
	if errors.As(err, &uerr) {
		cause = uerr.Err.Error()
	}
	return fmt.Errorf("pull %s: cannot reach the model hub at %s — check the internet connection, or give a mirror "+
		"with --endpoint or HF_ENDPOINT%s (%s)", name, endpoint, kept, cause)
}

// progress renders download events: a redrawn bar on a terminal, a plain line
// every few seconds otherwise (logs, pipes).
type progress struct {
	mu       sync.Mutex
	line     statusLine
	messages map[string]bool
}

func newProgress(w io.Writer) *progress {
	return &progress{line: newStatusLine(w), messages: map[string]bool{}}
}

func (p *progress) event(ev models.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.line.w
	if ev.Message != "" && !p.messages[ev.Message] {
		p.messages[ev.Message] = true
		p.line.clear()
		fmt.Fprintln(w, ev.Message)
	}
	if ev.Total == 0 || !p.line.due(false) {
		return
	}
	pct := float64(ev.Done) / float64(ev.Total)
	eta := "--"
	if ev.ETA > 0 {
		eta = ev.ETA.Round(time.Second).String()
	}
	stats := fmt.Sprintf("%5.1f%%  %s / %s  %s/s  ETA %s", 100*pct, store.FormatBytes(ev.Done), store.FormatBytes(ev.Total),
		store.FormatBytes(int64(ev.Rate)), eta)
	if !p.line.tty {
		fmt.Fprintf(w, "%s: %s\n", ev.Model, stats)
		return
	}
	width := 30
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > len(stats)+12 {
			width = min(40, cols-len(stats)-4)
		}
	}
	n := int(pct * float64(width))
	p.line.draw(fmt.Sprintf("[%s%s] %s", strings.Repeat("=", n), strings.Repeat(" ", width-n), stats))
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.line.keep()
}
