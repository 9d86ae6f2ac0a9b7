package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
)

func TestEmbedScale(t *testing.T) {
	for _, tc := range []struct {
		d     int
		dtype dtypes.DType
		want  float64
	}{
		{2816, dtypes.BFloat16, 53.0}, // upstream's bf16 rounding, not 53.066
		{2816, dtypes.Float32, float64(float32(math.Sqrt(2816)))},
		{128, dtypes.BFloat16, 11.3125}, // √128 = 11.3137 → bf16
	} {
		if got := EmbedScale(tc.d, tc.dtype); got != tc.want {
			t.Errorf("EmbedScale(%d, %s) = %v, want %v", tc.d, tc.dtype, got, tc.want)
		}
	}
}

// TestInvFreqProportional: the 26B's full layers rotate 64 of 256 pairs with the
// exponent over the full 512 dims; sliding layers rotate all 128 pairs.
func TestInvFreqProportional(t *testing.T) {
	inv, err := InvFreq(config.Rope{Type: "proportional", Theta: 1e6, PartialRotaryFactor: 0.25}, 512)
	if err != nil {
		t.Fatal(err)
	}
	if len(inv) != 256 {
		t.Fatalf("%d frequencies, want 256", len(inv))
	}
	for j, v := range inv {
		want := 0.0
		if j < 64 {
			want = math.Pow(1e6, -float64(2*j)/512)
		}
		if math.Abs(v-want) > 1e-15 {
			t.Fatalf("inv_freq[%d] = %g, want %g", j, v, want)
		}
	}
	inv, err = InvFreq(config.Rope{Type: "default", Theta: 1e4}, 256)
	if err != nil || len(inv) != 128 || inv[127] != math.Pow(1e4, -254.0/256) {
		t.Fatalf("default rope: %v, %v", err, inv[len(inv)-1])
	}
	if _, err := InvFreq(config.Rope{Type: "default", Theta: 1e4, PartialRotaryFactor: 0.5}, 64); err == nil {
		t.Error("partial default rope accepted")
	}
}

// TestMoECapacityBound: for random expert loads, the padded groups always fit the
// static capacity NB·Bk.
func TestMoECapacityBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		e := 1 + rng.IntN(130)
		n := 1 + rng.IntN(3000)
		bk := MoEBlockSize(n, e)
		if trial := rng.IntN(3); trial == 0 {
			bk = 1 << rng.IntN(7)
		}
		counts := make([]int, e)
		skew := rng.IntN(3)
		for range n {
			x := rng.IntN(e)
			if skew == 1 {
				x = min(x, rng.IntN(e)) // skewed loads
			} else if skew == 2 {
				x = rng.IntN(min(e, 3)) // all on few experts
			}
			counts[x]++
		}
		blocks := 0
		for _, c := range counts {
			blocks += (c + bk - 1) / bk
		}
		if nb := MoECapacityBlocks(n, e, bk); blocks > nb {
			t.Fatalf("N=%d E=%d Bk=%d: %d blocks needed > capacity %d", n, e, bk, blocks, nb)
		}
	}
}
