package gpuruntime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/darkroomlabs/darkroom/engine/backend"
)

// RunTinyGraph starts XLA with the CUDA plugin at plugin and runs a small
// matmul graph on it: the proof that GPU support works on this machine. It
// loads the plugin into this process for good, so installers run it in a child
// process (VerifyCommand).
func RunTinyGraph(ctx context.Context, plugin string) error {
	s, err := backend.New(backend.XLA + ":" + plugin)
	if err != nil {
		return err
	}
	defer s.Finalize()
	if s.Fallback != "" { // "XLA backend unavailable (why); using the pure-Go backend"
		why := strings.TrimSuffix(strings.TrimPrefix(s.Fallback, "XLA backend unavailable ("), "); using the pure-Go backend")
		return fmt.Errorf("the CUDA plugin did not start: %s", why)
	}
	if _, err := backend.MeasureMatMul(ctx, s, 64, 64, 64, 1); err != nil {
		return fmt.Errorf("a test graph failed on the GPU: %w", err)
	}
	return nil
}

// VerifyTimeout bounds one verification (XLA's first CUDA compile takes seconds).
const VerifyTimeout = 3 * time.Minute

// VerifyCommand returns a Verify that runs `exe args… PLUGIN` (Darkroom's own
// `gpu verify`, which calls RunTinyGraph) in a child process, so a plugin that
// crashes takes only the child down. The child's last stderr line is the reason
// when it fails.
func VerifyCommand(exe string, args ...string) func(ctx context.Context, plugin string) error {
	return func(ctx context.Context, plugin string) error {
		ctx, cancel := context.WithTimeout(ctx, VerifyTimeout)
		defer cancel()
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, exe, append(append([]string{}, args...), plugin)...)
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
				if _, why, ok := strings.Cut(last, ": "); ok && strings.HasPrefix(last, "darkroom") {
					last = why // "darkroom gpu: why" → "why"
				}
				return errors.New(last)
			}
			return fmt.Errorf("the test run on the GPU failed: %w", err)
		}
		return nil
	}
}
