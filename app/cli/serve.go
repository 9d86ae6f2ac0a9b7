package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/darkroomlabs/darkroom/app/server"
	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/backend"
	"github.com/darkroomlabs/darkroom/engine/chat"
	"github.com/darkroomlabs/darkroom/models"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/speed"
)

func init() {
	register(&Command{
		Name:    "serve",
		Summary: "serve browser-mode pages and an OpenAI-compatible API on 127.0.0.1",
		Run:     runServe,
	})
}

// serveInfo is what `darkroom serve --json` prints once it listens.
type serveInfo struct {
	URL     string `json:"url"`      // open in a browser (carries the token; its host is this run's *.localhost name)
	APIBase string `json:"api_base"` // OpenAI base URL, on 127.0.0.1
	Token   string `json:"token"`    // the API key ("" with --no-token)
	Model   string `json:"model"`    // the model's id in /v1/models and in requests
	Backend string `json:"backend"`
	// APIMode is the mode a chat completion without "mode" runs in, and why.
	APIMode speed.Choice `json:"api_mode"`
	// PageMode is the mode the browser's pages are written in (--mode, else the
	// model's, as APIMode).
	PageMode engine.Mode `json:"page_mode"`
	// Origins are the web pages allowed to call the API (--allow-origin).
	Origins []string `json:"allowed_origins,omitempty"`
}

func runServe(env *Env, args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, env, args)
}

// serve runs the server until ctx ends (SIGINT/SIGTERM in runServe).
func serve(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "serve", "[--model DIR|NAME] [--addr 127.0.0.1:PORT] [--backend NAME] [--json]")
	model := fs.String("model", "", "model folder or name from the library (default: the built-in Darkroom Mini)")
	addr := fs.String("addr", "127.0.0.1:0", "loopback address to listen on, e.g. 127.0.0.1:8765 (or just 8765) for a fixed port (port 0: a random free port)")
	backendName := fs.String("backend", "", backend.FlagUsage)
	token := fs.String("token", "", "use this token (API key) instead of a random one (at least 16 characters)")
	noToken := fs.Bool("no-token", false, "accept requests without the token (any program on this computer can then use the server)")
	mode := fs.String("mode", "", "how pages are written: diffusion or ar (default: the model's, as the Encyclopedia's automatic mode: the printer for Darkroom Mini)")
	seed := fs.Uint64("seed", 1, "seed the pages are written with")
	asJSON := fs.Bool("json", false, "print the URLs and token as one JSON line")
	var origins []string
	fs.Func("allow-origin", "a web page allowed to call the API from a browser, by its `ORIGIN`, e.g. http://localhost:3000 (repeat, or separate with commas, for more; it still needs the API key)", func(v string) error {
		o, err := server.ParseOrigins(v)
		origins = append(origins, o...)
		return err
	})
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("serve: unexpected argument %q", fs.Arg(0))
	}
	if *noToken && *token != "" {
		return errors.New("serve: give --token or --no-token, not both")
	}
	m := engine.Mode(*mode)
	if m != "" && m != engine.Diffusion && m != engine.AR {
		return fmt.Errorf("serve: --mode must be diffusion or ar, got %q", *mode)
	}

	// Check the server options before looking for the model and loading it.
	opts := server.Options{Addr: *addr, Token: *token, NoToken: *noToken, Mode: m, Seed: *seed, Origins: origins,
		Logf: func(format string, a ...any) { fmt.Fprintf(env.Stderr, format+"\n", a...) }}
	opts.Engine = noEngine{}
	if _, err := server.New(opts); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if err := server.CheckAddr(*addr); errors.Is(err, server.ErrPortInUse) {
		return fmt.Errorf("serve: %w: choose another port with --addr 127.0.0.1:PORT, or leave --addr out for a free one", err)
	} else if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	src, id, err := serveSource(*model)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	opts.ModelID, opts.System = id, catalog.System(id)
	if opts.Leads, err = models.Leads(src); err != nil {
		return fmt.Errorf("serve: %w", err)
	}

	eng, err := loadEngine(ctx, env, src, engine.Options{Backend: *backendName})
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(env.Stderr, serveStoppedEarly)
			return nil
		}
		return fmt.Errorf("serve: %w", err)
	}
	defer eng.Close()
	opts.Engine = eng
	opts.AnswerTokens = catalog.AnswerTokens(id, eng.Config())
	_, hasThink := eng.Tokenizer().ID(chat.Think)
	opts.NoThinking = catalog.NoThinking(id == catalog.MiniID, hasThink)
	// A request without "mode" runs the faster mode here where both write equally well.
	device := speed.Device(eng.Backend())
	rates, err := ratesNoted(ctx, env.Stderr, device, false)
	if ctx.Err() != nil { // Ctrl-C while measuring: announcing the server now would say it serves
		fmt.Fprintln(env.Stderr, serveStoppedEarly)
		return nil
	}
	if err != nil {
		fmt.Fprintln(env.Stderr, "darkroom:", err)
	}
	choice, _ := speed.ForLoaded(id, eng.Config(), eng.GGUFLayout(), device, rates, speed.LoadedFromDisk(ctx, eng))
	opts.APIMode, opts.APIModeReason = choice.Mode, choice.Reason
	if m == "" { // pages in the model's mode too, as the app's Encyclopedia writes them
		m = choice.Mode
	}
	opts.Mode = m
	srv, err := server.New(opts)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if err := srv.Start(ctx); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	info := serveInfo{URL: srv.URL("/"), APIBase: srv.APIBase(), Token: srv.Token(), Model: id, Backend: eng.Backend(), APIMode: choice, PageMode: m, Origins: origins}
	if *asJSON {
		b, _ := json.Marshal(info)
		fmt.Fprintln(env.Stdout, string(b))
	} else {
		fmt.Fprintln(env.Stdout, info.URL)
		fmt.Fprintf(env.Stderr, "Darkroom is serving %s (%s backend).\n  Browser:  %s\n  API base: %s (Anthropic clients: %s)\n", id, info.Backend,
			info.URL, info.APIBase, strings.TrimSuffix(info.APIBase, "/v1"))
		fmt.Fprintf(env.Stderr, "  API mode: %s unless a request names one\n", choice.Reason)
		fmt.Fprintf(env.Stderr, "  Pages:    written with the %s\n", speed.Name(info.PageMode))
		if info.Token != "" {
			fmt.Fprintf(env.Stderr, "  API key:  %s\n", info.Token)
		} else {
			fmt.Fprintln(env.Stderr, "  No token: any program on this computer can use the server.")
		}
		for _, o := range origins {
			fmt.Fprintf(env.Stderr, "  Web page: %s may call the API from a browser\n", o)
		}
		fmt.Fprintln(env.Stderr, "Press Ctrl+C to stop.")
	}
	<-srv.Done()
	err = srv.Close() // after ctx ended: waits for open requests to finish
	fmt.Fprintln(env.Stderr, "Stopped.")
	return err
}

// serveStoppedEarly is serve's last line when Ctrl-C stops it before it serves.
const serveStoppedEarly = "Stopped (Ctrl+C) before serving."

// serveSource resolves --model: empty is the built-in Darkroom Mini, anything
// else goes through the models library (a folder, a catalog or local name).
func serveSource(model string) (engine.Source, string, error) {
	if model == "" {
		fsys, err := assets.Mini()
		if err != nil {
			return engine.Source{}, "", fmt.Errorf("no --model given and %w", err)
		}
		return engine.FS(fsys, "Darkroom Mini (built in)"), catalog.MiniID, nil
	}
	src, err := models.Source(model)
	if err != nil {
		return engine.Source{}, "", err
	}
	id := model
	if src.Dir != "" {
		if st, err := os.Stat(model); err == nil && st.IsDir() {
			id = filepath.Base(filepath.Clean(src.Dir))
		}
	}
	return src, id, nil
}

// noEngine lets serve check its server options before the model is loaded.
type noEngine struct{}

func (noEngine) Generate(context.Context, engine.Request) (*engine.Result, error) {
	return nil, errors.New("no model loaded")
}
