package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/darkroomlabs/darkroom/app/plural"
	"github.com/darkroomlabs/darkroom/engine/backend"
	"github.com/darkroomlabs/darkroom/engine/backend/nvidia"
	"github.com/darkroomlabs/darkroom/models"
	"github.com/darkroomlabs/darkroom/models/download"
	"github.com/darkroomlabs/darkroom/models/gpuruntime"
	"github.com/darkroomlabs/darkroom/models/store"
)

func init() {
	register(&Command{
		Name:    "gpu",
		Summary: "install, check or remove GPU support (the PJRT CUDA plugin and NVIDIA libraries)",
		Run:     runGPU,
	})
}

// findGPUs is the NVIDIA probe (tests replace it).
var findGPUs = nvidia.Find

const gpuUsage = `Usage: darkroom gpu install [--cuda 12|13] [--force] [--json]
       darkroom gpu status [--json]
       darkroom gpu remove
       darkroom gpu verify PLUGIN   (run by install: a test graph on the GPU)
       darkroom gpu logits --model DIR --ids FILE --out DIR   (packaging/gpu-check.sh: logits to compare)

install fetches the PJRT CUDA plugin and the NVIDIA libraries it needs from the
Python package index (verified, resumable: run it again after an interruption)
into Darkroom's runtime folder, then runs a test graph on the GPU; only then is
GPU support marked installed and the default backend, auto, uses it.`

func runGPU(env *Env, args []string) error {
	return subcommands{
		name:  "gpu",
		usage: func() { fmt.Fprintln(env.Stdout, gpuUsage) },
		none:  "which one? install, status, remove or verify",
		list:  "install, status, remove or verify",
		verbs: map[string]func(*Env, []string) error{
			"install": runGPUInstall,
			"status":  runGPUStatus,
			"remove":  runGPURemove,
			"verify":  runGPUVerify,
			"logits":  runGPULogits,
		},
	}.runSub(env, args)
}

func newGPUInstaller(index string) *gpuruntime.Installer {
	if index == "" {
		index = gpuruntime.DefaultIndex
	}
	return &gpuruntime.Installer{
		Index:    gpuruntime.Index{URL: index},
		Download: download.Options{FreeSpace: store.FreeSpace},
		Verify:   gpuVerify(),
	}
}

// gpuVerify runs `darkroom gpu verify PLUGIN` in a child process, so a plugin
// that crashes does not take this one down (tests run the check in process).
var gpuVerify = func() func(context.Context, string) error {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return gpuruntime.VerifyCommand(exe, "gpu", "verify")
}

func runGPUInstall(env *Env, args []string) error {
	fs := newFlagSet(env, "gpu install", "[--cuda 12|13] [--force] [--json]")
	cuda := fs.String("cuda", "", "CUDA generation: 12 or 13 (default: what the NVIDIA driver runs — 13 from driver 580, else 12)")
	force := fs.Bool("force", false, "download even when no NVIDIA GPU is found (it cannot be verified then)")
	index := fs.String("index", os.Getenv(gpuruntime.IndexEnvVar), "package index JSON API (default $"+gpuruntime.IndexEnvVar+", else "+gpuruntime.DefaultIndex+")")
	asJSON := fs.Bool("json", false, "print the resulting status as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return errors.New("gpu install: takes no arguments")
	}
	in := newGPUInstaller(*index)
	if err := in.Supported(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	gpus, problem := findGPUs(ctx)
	gpuName := "no GPU"
	switch {
	case len(gpus) > 0:
		gpuName = gpus[0].Name
	case !*force:
		return fmt.Errorf("No NVIDIA GPU found (%s), so GPU support would have nothing to run on; --force downloads it anyway", problem)
	}
	gen := ""
	switch *cuda {
	case "12", "cuda12":
		gen = "cuda12"
	case "13", "cuda13":
		gen = "cuda13"
	case "":
		var err error
		g := nvidia.GPU{}
		if len(gpus) > 0 {
			g = gpus[0]
		}
		if gen, err = gpuruntime.CUDAFor(g); err != nil {
			return err
		}
	default:
		return fmt.Errorf("--cuda must be 12 or 13, got %q", *cuda)
	}
	plan, err := in.Plan(ctx, gen)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "GPU support for %s: the CUDA %s plugin of JAX %s and %s, %s to download into %s\n",
		gpuName, strings.TrimPrefix(gen, "cuda"), plan.JAX, plural.Count(len(plan.Library), "NVIDIA library", "NVIDIA libraries"),
		store.FormatBytes(plan.Size()), backend.Runtime().Dir)
	bar := newProgress(env.Stderr)
	in.Download.OnEvent = func(ev download.Event) {
		e := models.Event{Model: "GPU support", State: string(ev.State), File: ev.File, Done: ev.Done, Total: ev.Total, Rate: ev.Rate, ETA: ev.ETA}
		if ev.Kind == download.EventRetry && ev.Err != nil {
			e.Message = fmt.Sprintf("%s: retrying (%v)", ev.File, ev.Err)
		}
		bar.event(e)
	}
	in.OnStage = func(s string) {
		if s == gpuruntime.StageExtracting || s == gpuruntime.StageVerifying {
			bar.finish()
			fmt.Fprintf(env.Stderr, "%s…\n", strings.ToUpper(s[:1])+s[1:])
		}
	}
	err = in.Install(ctx, plan)
	bar.finish()
	var nv *gpuruntime.NotVerifiedError
	if errors.As(err, &nv) {
		return fmt.Errorf("GPU support was downloaded to %s but not verified, so it is not marked installed and Darkroom keeps running on the CPU: %v",
			backend.Runtime().Dir, nv.Reason)
	}
	if err != nil {
		if ctx.Err() != nil {
			return errors.New("gpu install: interrupted; run it again to resume the download")
		}
		return err
	}
	if *asJSON {
		return printJSON(env, in.Status())
	}
	fmt.Fprintf(env.Stdout, "GPU support installed and verified on the %s; the default backend (auto) now runs there.\n", gpuName)
	return nil
}

func runGPUStatus(env *Env, args []string) error {
	fs := newFlagSet(env, "gpu status", "[--json]")
	asJSON := fs.Bool("json", false, "print the status as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	in := newGPUInstaller("")
	st := in.Status()
	if *asJSON {
		return printJSON(env, st)
	}
	w := env.Stdout
	switch {
	case st.Installed:
		fmt.Fprintf(w, "GPU support: installed and verified %s (CUDA %s plugin of JAX %s), %s in %s\n",
			st.VerifiedAt.Local().Format("2006-01-02 15:04"), strings.TrimPrefix(st.Plan.CUDA, "cuda"), st.Plan.JAX,
			store.FormatBytes(st.Disk), st.Dir)
	case st.Downloaded:
		fmt.Fprintf(w, "GPU support: downloaded to %s (%s) but not verified on a GPU; `darkroom gpu install` verifies it again\n",
			st.Dir, store.FormatBytes(st.Disk))
	case st.Partial > 0:
		fmt.Fprintf(w, "GPU support: not installed; %s of an interrupted download in %s (`darkroom gpu install` resumes it)\n",
			store.FormatBytes(st.Partial), st.Dir)
	default:
		fmt.Fprintf(w, "GPU support: not installed (`darkroom gpu install` installs it into %s)\n", st.Dir)
	}
	if err := in.Supported(); err != nil {
		fmt.Fprintln(w, err)
	}
	probes := backend.DefaultProbes()
	probes.GPUs = findGPUs
	fmt.Fprintln(w, backend.Choose(context.Background(), probes).Reason)
	return nil
}

func runGPURemove(env *Env, args []string) error {
	fs := newFlagSet(env, "gpu remove", "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	in := newGPUInstaller("")
	st := in.Status()
	if err := in.Remove(); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "GPU support removed from %s (%s freed).\n", st.Dir, store.FormatBytes(st.Disk))
	return nil
}

func runGPUVerify(env *Env, args []string) error {
	fs := newFlagSet(env, "gpu verify", "PLUGIN")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("gpu verify: give the plugin's path")
	}
	if err := gpuruntime.RunTinyGraph(context.Background(), fs.Arg(0)); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "a test graph ran on the GPU with %s\n", fs.Arg(0))
	return nil
}

func printJSON(env *Env, v any) error {
	enc := json.NewEncoder(env.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
