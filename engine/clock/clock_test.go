package clock

import (
	"testing"
	"time"
)

// TestResolution: the clock moves within microseconds — most first steps of the
// reading are under 10 µs — where Windows' time.Now moves once a timer tick (0.5 to
// 15.6 ms; under Wine every 20 µs to 19 ms, as its server updates the page) and
// measured a probe of a few microseconds as 0.
func TestResolution(t *testing.T) {
	var steps []time.Duration
	for range 20 {
		t0 := Now()
		var d time.Duration
		for d == 0 {
			d = Since(t0)
		}
		steps = append(steps, d)
	}
	small := 0
	for _, d := range steps {
		if d < 0 {
			t.Fatalf("the clock went back: %v", d)
		}
		if d < 10*time.Microsecond {
			small++
		}
	}
	if small < len(steps)/2 {
		t.Fatalf("the clock's smallest steps %v: most should be under 10 µs", steps)
	}
}

// TestSince: an interval the Go runtime sleeps measures at least that long and not
// wildly more.
func TestSince(t *testing.T) {
	t0 := Now()
	time.Sleep(20 * time.Millisecond)
	if d := Since(t0); d < 20*time.Millisecond || d > 5*time.Second {
		t.Fatalf("a 20 ms sleep measured %v", d)
	}
}
