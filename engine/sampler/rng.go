package sampler

// Counter-based randomness.
//
// Every random number of a generation is a pure function of the seed and of where it
// is used: a (counter, step, stream) triple selects a Key (counter: the canvas, or the
// AR token), and a Key hashes a position to 32 random bits. No state advances between
// draws, so a step's draws can be computed anywhere and in any order with the same
// result: the host sampler here and the in-graph sampler (StepGraph, on the device)
// compute the same numbers from the same Plan.Keys.
//
// The key is SplitMix64 over the seed, the counter and the step; the per-position hash
// is two rounds of Chris Wellons' lowbias32 around the key's two halves, because it
// needs only 32-bit xor, multiply and shifts by constants (a shift is a division by a
// power of two in the graph: GoMLX's pure-Go backend has no shift operations).

// RNG is a generation's counter-based random source (see Key).
type RNG struct{ seed uint64 }

// NewRNG returns the random source of a generation seeded with seed.
func NewRNG(seed uint64) RNG { return RNG{seed: seed} }

// The streams a sampler draws from (Key's kind).
const (
	streamSample = 1 // the categorical draw of each canvas position (Step)
	streamNoise  = 2 // the fresh ids of re-noised and initial positions (Step, Canvas)
	streamToken  = 3 // the AR mode's one-token draws (Token)
)

// Key is the stream of one (counter, step, kind).
func (r RNG) Key(counter, step int, kind uint64) Key {
	x := splitmix64(r.seed)
	x = splitmix64(x ^ uint64(counter))
	x = splitmix64(x ^ (uint64(step)<<8 | kind))
	return Key{K1: uint32(x), K2: uint32(x >> 32)}
}

// Key is one stream of 32-bit draws indexed by position: Uint32(i) =
// mix32(mix32(i ^ K1) + K2), mix32 being lowbias32.
type Key struct{ K1, K2 uint32 }

// Uint32 is position i's 32 random bits.
func (k Key) Uint32(i int) uint32 { return mix32(mix32(uint32(i)^k.K1) + k.K2) }

// Float64 is position i's uniform draw in [0, 1): Uint32(i)·2⁻³².
func (k Key) Float64(i int) float64 { return float64(k.Uint32(i)) / (1 << 32) }

// IntN is position i's uniform id in [0, n) (n < 2³¹): ⌊Uint32(i)·n / 2³²⌋, Lemire's
// multiply-shift (bias at most n/2³²).
func (k Key) IntN(i, n int) int { return int(uint64(k.Uint32(i)) * uint64(n) >> 32) }

// mix32 is lowbias32 (Wellons' hash-prospector): a bijection of uint32 with low bias.
func mix32(x uint32) uint32 {
	x ^= x >> 16
	x *= 0x7feb352d
	x ^= x >> 15
	x *= 0x846ca68b
	x ^= x >> 16
	return x
}

// splitmix64 is SplitMix64's output function over z + the golden gamma.
func splitmix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
