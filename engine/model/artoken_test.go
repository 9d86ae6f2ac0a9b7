//go:build linux

package model

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/model/arch"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// BenchmarkARToken is one AR token on the host — the encoder over one new token, the
// final norm and the head's logits, as Runner.Encode computes them — of the checkpoint
// in DARKROOM_AR_MODEL (skipped without one), after a 16-token prompt, and where its
// wall time goes: ms/token; the process's CPU time (cpu-ms/token); its threads' time
// runnable but waiting for a CPU (runq-ms/token: other processes holding the cores);
// what is left of GOMAXPROCS·wall (idle-ms/token: processors with nothing to run —
// serial work between the products and the pool's hand-offs); the page faults taken
// (minflt/token: a page mapped from the page cache; majflt/token: one read from the
// disk first — the weights' first use, or pages the system dropped); and each op's
// wall (<op>-ms/token, products by weight name). Populating the mapping (prefetch.go)
// and the prompt's pass are timed in the log; DARKROOM_AR_LAZY=1 leaves the weights to
// be read as first used instead, as before populate.
//
//	DARKROOM_AR_MODEL=/work/scratch/dg26b-2l16e-int4 go test ./engine/model -run '^$' -bench ARToken -benchtime 20x
func BenchmarkARToken(b *testing.B) {
	dir := os.Getenv("DARKROOM_AR_MODEL")
	if dir == "" {
		b.Skip("DARKROOM_AR_MODEL names no checkpoint")
	}
	if os.Getenv("DARKROOM_AR_LAZY") == "1" {
		defer func(f func([]byte) error) { populatePages = f }(populatePages)
		populatePages = func([]byte) error { return errors.New("lazy") }
	}
	cfg, err := config.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	mapped, ok, err := weights.Map(dir, cfg, nil)
	if err != nil || !ok {
		b.Fatalf("map %s: ok %v, %v", dir, ok, err)
	}
	defer mapped.Close()
	r, err := NewHostRunner(&cfg.Text, mapped)
	if err != nil {
		b.Fatal(err)
	}
	prompt := make([]int, 16)
	for i := range prompt {
		prompt[i] = 100 + i
	}
	t0 := time.Now()
	r.hostModel().prefetchLayer(0) // the first pass's read-ahead: populate
	t1 := time.Now()
	if _, err := r.Encode(prompt); err != nil { // also prepares the head
		b.Fatal(err)
	}
	b.Logf("populate %v (populated: %v), then the %d-token prompt %v", t1.Sub(t0).Round(time.Millisecond),
		r.weights.populated, len(prompt), time.Since(t1).Round(time.Millisecond))
	ops := map[string]time.Duration{}
	token := func(tok int32) {
		m, cache := r.hostModel(), &r.hcache
		m.use(cache) // as decode and encode ready it
		o := &timedOps{o: &hostOps{h: m, cache: cache, start: cache.n, causal: true}, wall: ops}
		hs := arch.Layers(o, m.cfg, m.embed([]int32{tok}), r.weights.encoderScalar)
		cache.n++
		hn := arch.Output(o, m.cfg, hs)
		defer o.time("head")()
		_ = r.head.logits(hn, 1, m.cfg.FinalLogitSoftcapping)
	}
	for i := range 2 { // warm-up: the weights' pages and the scratch
		token(int32(200 + i))
	}
	clear(ops)
	r0 := rusage(b)
	w0, q0 := time.Now(), runQueueWait(b)
	b.ResetTimer()
	for i := range b.N {
		token(int32(300 + i%1000))
	}
	b.StopTimer()
	r1 := rusage(b)
	wall, cpu, runq := time.Since(w0), cpuTime(r1)-cpuTime(r0), runQueueWait(b)-q0
	per := func(d time.Duration) float64 { return d.Seconds() * 1e3 / float64(b.N) }
	b.ReportMetric(per(wall), "ms/token")
	b.ReportMetric(per(cpu), "cpu-ms/token")
	b.ReportMetric(per(runq), "runq-ms/token")
	b.ReportMetric(per(time.Duration(runtime.GOMAXPROCS(0))*wall-cpu-runq), "idle-ms/token")
	b.ReportMetric(float64(r1.Minflt-r0.Minflt)/float64(b.N), "minflt/token")
	b.ReportMetric(float64(r1.Majflt-r0.Majflt)/float64(b.N), "majflt/token")
	for op, d := range ops {
		b.ReportMetric(per(d), op+"-ms/token")
	}
}

// rusage is the process's resource usage so far.
func rusage(b *testing.B) *syscall.Rusage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return &ru
}

// cpuTime is ru's user and system CPU time.
func cpuTime(ru *syscall.Rusage) time.Duration {
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runQueueWait is the time the process's threads have spent runnable on a run queue,
// the second field of each /proc/self/task/*/schedstat.
func runQueueWait(b *testing.B) time.Duration {
	paths, err := filepath.Glob("/proc/self/task/*/schedstat")
	if err != nil || len(paths) == 0 {
		b.Fatalf("no schedstat: %v", err)
	}
	var total time.Duration
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue // a thread that exited
		}
		var run, wait int64
		if _, err := fmt.Sscan(string(raw), &run, &wait); err != nil {
			b.Fatalf("%s: %v", p, err)
		}
		total += time.Duration(wait)
	}
	return total
}

// timedOps are hostOps adding each op's wall time to wall, by op (products by the
// weight's last name but one: q_proj, experts' down_proj is "experts").
type timedOps struct {
	o    *hostOps
	wall map[string]time.Duration
}

var _ arch.Ops[[]float32] = (*timedOps)(nil)

func (t *timedOps) time(op string) func() {
	t0 := time.Now()
	return func() { t.wall[op] += time.Since(t0) }
}

// product names weight's product: "layers.3.self_attn.q_proj.weight" → q_proj.
func product(weight string) string {
	parts := strings.Split(weight, ".")
	if len(parts) < 2 {
		return weight
	}
	return parts[len(parts)-2]
}

func (t *timedOps) StartLayer(i int) { defer t.time("startlayer")(); t.o.StartLayer(i) }
func (t *timedOps) Linear(x []float32, w string) []float32 {
	defer t.time(product(w))()
	return t.o.Linear(x, w)
}
func (t *timedOps) LinearF32(x []float32, w string) []float32 {
	defer t.time(product(w))()
	return t.o.LinearF32(x, w)
}
func (t *timedOps) Norm(x []float32, n int, w string) []float32 {
	defer t.time("norm")()
	return t.o.Norm(x, n, w)
}
func (t *timedOps) NormInPlace(x []float32, n int, w string) []float32 {
	defer t.time("norm")()
	return t.o.NormInPlace(x, n, w)
}
func (t *timedOps) Add(a, b []float32) []float32 { defer t.time("add")(); return t.o.Add(a, b) }
func (t *timedOps) Scale(x []float32, s float64) []float32 {
	defer t.time("scale")()
	return t.o.Scale(x, s)
}
func (t *timedOps) ScaleBy(x []float32, w string) []float32 {
	defer t.time("scale")()
	return t.o.ScaleBy(x, w)
}
func (t *timedOps) GeGLU(g, u []float32) []float32 { defer t.time("geglu")(); return t.o.GeGLU(g, u) }
func (t *timedOps) RoPE(l int, x []float32, h int) []float32 {
	defer t.time("rope")()
	return t.o.RoPE(l, x, h)
}
func (t *timedOps) Attend(l int, q, k, v []float32) []float32 {
	defer t.time("attend")()
	return t.o.Attend(l, q, k, v)
}
func (t *timedOps) Experts(l int, x, lg []float32) []float32 {
	defer t.time("experts")()
	return t.o.Experts(l, x, lg)
}
