package model

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// mappedTiny writes config.Tiny()'s random int4 checkpoint and maps it.
func mappedTiny(t *testing.T) (*config.Model, *weights.Mapped) {
	t.Helper()
	cfg := config.Tiny()
	q, err := weights.Random(cfg, 5).Quantize(cfg, quant.Int4Profile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := weights.Save(q, cfg, dir, weights.SaveOptions{Shards: 2, DType: "bf16"}); err != nil {
		t.Fatal(err)
	}
	lc, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, ok, err := weights.Map(dir, lc, nil)
	if err != nil || !ok {
		t.Fatalf("map: ok %v, %v", ok, err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return lc, m
}

// TestHostPopulatesMapping: the first pass over a mapped checkpoint populates the
// stored bytes of every weight in the table, the experts' included, once — and then
// reads nothing ahead — when they fit in the memory available beside
// populateReserve; one byte short of that, or when populating fails, nothing is
// marked populated and the layers and routed experts are read ahead as before —
// where they do not fit, at every pass (the kernel may have dropped what the last
// one read), not only the first.
func TestHostPopulatesMapping(t *testing.T) {
	cfg, m := mappedTiny(t)
	var want [][]byte
	var total int64
	for _, s := range weights.Specs(cfg) {
		st, _, ok, err := m.Lookup(s.Name)
		if err != nil || !ok {
			t.Fatalf("%s: ok %v, %v", s.Name, ok, err)
		}
		for _, b := range [][]byte{st.Data, st.Scales, st.Mins} {
			if len(b) > 0 {
				want, total = append(want, b), total+int64(len(b))
			}
		}
	}
	defer func(p func([]byte) error, a func() int64, w func([]byte)) {
		populatePages, availableMemory, adviseWillNeed = p, a, w
	}(populatePages, availableMemory, adviseWillNeed)
	cases := []struct {
		name      string
		available int64
		fail      bool
		populated bool
		paging    bool
	}{
		{"fits", total + populateReserve, false, true, false},
		{"a byte short", total + populateReserve - 1, false, false, true},
		{"populate fails", total + populateReserve, true, false, false},
		{"memory unknown", 0, false, false, false}, // off Linux and Windows: nothing populated, advised once
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var populated [][]byte
			advised := 0
			availableMemory = func() int64 { return c.available }
			var advisedAt []*byte
			adviseWillNeed = func(b []byte) {
				advised++
				if len(b) > 0 {
					advisedAt = append(advisedAt, &b[0])
				}
			}
			populatePages = func(b []byte) error {
				populated = append(populated, b)
				if c.fail && len(populated) == 2 {
					return errors.New("injected")
				}
				return populateBytes(b)
			}
			r, err := NewHostRunner(&cfg.Text, m)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Encode([]int{3, 4}); err != nil {
				t.Fatal(err)
			}
			if r.weights.populated != c.populated || r.weights.paging != c.paging {
				t.Fatalf("populated %v, paging %v; want %v, %v", r.weights.populated, r.weights.paging, c.populated, c.paging)
			}
			if mapped, avail, room, ok := r.FromDisk(); ok != c.paging || ok && (mapped != total || avail != c.available || room != c.available-populateReserve) {
				t.Errorf("FromDisk: %d bytes mapped, %d available, room %d, %v; want %v with %d of %d", mapped, avail, room, ok, c.paging, total, c.available)
			}
			switch {
			case c.populated:
				if !sameSpans(populated, want) {
					t.Errorf("populated %d spans, want the %d of every weight, each once", len(populated), len(want))
				}
				if advised != len(want) {
					t.Errorf("%d read-ahead calls, want populate's own, one a span (%d)", advised, len(want))
				}
			case c.fail:
				if len(populated) != 2 {
					t.Errorf("populated %d spans after the failure, want it to stop at the second", len(populated))
				}
			default:
				if len(populated) != 0 {
					t.Errorf("populated %d spans with too little memory", len(populated))
				}
				if advised == 0 {
					t.Errorf("nothing read ahead, populated or not")
				}
			}
			advised, advisedAt = 0, nil
			if _, err := r.Encode([]int{5}); err != nil {
				t.Fatal(err)
			}
			if len(populated) > len(want) {
				t.Errorf("the second pass populated again")
			}
			if c.populated && advised != 0 {
				t.Errorf("%d read-ahead calls after populating", advised)
			}
			// Every layer's matrices before its experts: advised again at every pass
			// where the weights do not fit, else once.
			again := 0
			for _, names := range layerMatrices(&cfg.Text) {
				for _, name := range names {
					st, _, _, err := m.Lookup(name)
					if err != nil {
						t.Fatal(err)
					}
					for _, b := range advisedAt {
						if b == &st.Data[0] {
							again++
						}
					}
				}
			}
			if c.paging && again < cfg.Text.NumHiddenLayers || !c.paging && again != 0 {
				t.Errorf("%d layer matrices read ahead again at the second pass (paging %v)", again, c.paging)
			}
		})
	}
}

// TestReadWeights: ReadWeights populates the mapping before the first pass, reporting
// the bytes as it goes up to the total, and the first pass then populates nothing
// again; stopped after its first tensor it leaves the weights unpopulated, and the
// first pass reads ahead as without it rather than populating from the start.
func TestReadWeights(t *testing.T) {
	cfg, m := mappedTiny(t)
	defer func(p func([]byte) error, a func() int64) { populatePages, availableMemory = p, a }(populatePages, availableMemory)
	availableMemory = func() int64 { return 1 << 50 }
	for _, stopAfter := range []int{-1, 1} {
		calls := 0
		populatePages = func(b []byte) error { calls++; return populateBytes(b) }
		r, err := NewHostRunner(&cfg.Text, m)
		if err != nil {
			t.Fatal(err)
		}
		var reports [][2]int64
		r.ReadWeights(func() bool { return stopAfter >= 0 && len(reports) >= stopAfter },
			func(done, total int64) { reports = append(reports, [2]int64{done, total}) })
		read := calls
		if stopAfter < 0 {
			n := len(reports)
			if n == 0 || reports[n-1][0] != reports[n-1][1] || !r.weights.populated {
				t.Fatalf("read %v (populated %v): want every weight's bytes reported up to the total", reports, r.weights.populated)
			}
			for i := 1; i < n; i++ {
				if reports[i][0] <= reports[i-1][0] || reports[i][1] != reports[0][1] {
					t.Fatalf("reports %v do not rise to one total", reports)
				}
			}
		} else if len(reports) != stopAfter || read != stopAfter || r.weights.populated {
			t.Fatalf("stopped after %d: %d reports, %d tensors populated, populated %v", stopAfter, len(reports), read, r.weights.populated)
		}
		if _, err := r.Encode([]int{3, 4}); err != nil {
			t.Fatal(err)
		}
		if calls != read {
			t.Errorf("stop after %d: the first pass populated %d more tensors after ReadWeights", stopAfter, calls-read)
		}
	}
}

// sameSpans reports whether got holds exactly want's byte ranges, each once.
func sameSpans(got, want [][]byte) bool {
	type span struct{ p, n uintptr }
	count := map[span]int{}
	for _, b := range want {
		count[span{uintptr(unsafe.Pointer(&b[0])), uintptr(len(b))}]++
	}
	for _, b := range got {
		count[span{uintptr(unsafe.Pointer(&b[0])), uintptr(len(b))}]--
	}
	for _, n := range count {
		if n != 0 {
			return false
		}
	}
	return len(got) == len(want)
}
