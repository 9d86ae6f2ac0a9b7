package htmlsafe

import "strings"

// A page that is still developing has positions whose token is not decided yet.
// The app writes them as noise runes, characters from a private-use range that no
// tokenizer emits and no markup uses, so the draft still parses as HTML and every
// undecided position comes out as a Noise run in the Doc, at the place and roughly
// the width of the random token it stands for.
const (
	noiseBase = 0xE000
	noiseSpan = 64
)

// noiseGlyphs are what noise looks like on screen: a dim scatter of marks. None
// of them is a character of markup ("<", ">", "/", "=", quotes), so no run of
// noise, next to text or not, reads as a tag fragment (engine/markup).
const noiseGlyphs = "░▒▓#%&*+~^:;!?|{}[]()@$"

// IsNoise reports whether r is a noise rune.
func IsNoise(r rune) bool { return r >= noiseBase && r < noiseBase+noiseSpan }

// NoiseText returns n noise runes; seed varies which ones, so consecutive frames
// shimmer instead of showing the same pattern.
func NoiseText(n int, seed uint32) string {
	var b strings.Builder
	x := seed*2654435761 + 1
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b.WriteRune(rune(noiseBase + int(x%noiseSpan)))
	}
	return b.String()
}

// ShowNoise maps the noise runes of s to visible glyphs (for display only).
func ShowNoise(s string) string {
	glyphs := []rune(noiseGlyphs)
	return strings.Map(func(r rune) rune {
		if IsNoise(r) {
			return glyphs[int(r-noiseBase)%len(glyphs)]
		}
		return r
	}, s)
}
