package tokenizer

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// miniCorpus builds a small corpus shaped like Darkroom Mini's training data:
// HTML encyclopedia pages and chat turns with special tokens.
func miniCorpus(n int) []string {
	words := strings.Fields("the a an of to is in and operating system program computer language data network file " +
		"memory kernel process user unix software hardware protocol compiler function variable byte machine code " +
		"internet server client storage interface algorithm")
	rng := rand.New(rand.NewPCG(7, 9))
	sentence := func() string {
		k := 5 + rng.IntN(10)
		ws := make([]string, k)
		for i := range ws {
			ws[i] = words[rng.IntN(len(words))]
		}
		s := strings.Join(ws, " ")
		return strings.ToUpper(s[:1]) + s[1:] + "."
	}
	var out []string
	for i := range n {
		title := words[rng.IntN(len(words))]
		switch i % 2 {
		case 0:
			out = append(out, fmt.Sprintf("<h1>%s</h1>\n<p>%s %s <a href=\"/wiki/%s\">%s</a>.</p>\n<ul><li>%s</li></ul>",
				title, sentence(), sentence(), title, title, sentence()))
		case 1:
			out = append(out, fmt.Sprintf("<|turn>user\nWhat is %s?<turn|>\n<|turn>model\n<|channel>thought\n<channel|>%s<turn|>\n", title, sentence()))
		}
	}
	return out
}

func TestTrainSpecialIDs(t *testing.T) {
	tr, err := Train(Slice(miniCorpus(200)), TrainOptions{VocabSize: 600})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tr.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	for id, s := range MiniSpecialTokens {
		if got, ok := tok.ID(s); !ok || got != id {
			t.Errorf("ID(%q) = %d, %v; want %d", s, got, ok, id)
		}
		if ids := tok.Encode(s); !reflect.DeepEqual(ids, []int{id}) {
			t.Errorf("Encode(%q) = %v, want [%d]", s, ids, id)
		}
	}
	for b := 0; b < 256; b++ {
		if got, _ := tok.ID(byteToken(byte(b))); got != MiniFirstByte+b {
			t.Errorf("byte %#x has id %d, want %d", b, got, MiniFirstByte+b)
		}
	}
	sp := tok.Specials()
	want := Specials{BOS: MiniBOS, EOS: MiniEOS, Pad: MiniPad, Unk: MiniUnk, Mask: MiniMask, TurnStart: MiniTurnStart,
		TurnEnd: MiniTurnEnd, Think: 7, ChannelStart: 8, ChannelEnd: 9, ToolResponse: MiniToolResponse}
	if sp != want {
		t.Errorf("Specials = %+v, want %+v", sp, want)
	}
	if got := tok.EndOfGeneration(); !reflect.DeepEqual(got, MiniEndOfGeneration()) {
		t.Errorf("EndOfGeneration = %v, MiniEndOfGeneration = %v", got, MiniEndOfGeneration())
	}
	if tok.VocabSize() != tr.VocabSize || tr.VocabSize != 600 {
		t.Errorf("vocab size: tokenizer %d, trained %d, want 600", tok.VocabSize(), tr.VocabSize)
	}
}

func TestTrainRoundTripAndCompression(t *testing.T) {
	corpus := miniCorpus(400)
	tr, err := Train(Slice(corpus), TrainOptions{VocabSize: 1000, MinFrequency: 2})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tr.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	held := append(miniCorpus(20),
		"Unseen words: zyxwvut, café, 東京, emoji 👍🏽, tabs\t\tand   spaces\n\n",
		"<|turn>system\n<|think|>\n<turn|>\n<|turn>user\nhi<turn|>\n",
		"<0x41> is not a byte token when written as text",
	)
	var chars, ids int
	for _, text := range held {
		enc := tok.Encode(text)
		if got := tok.Decode(enc); got != text {
			t.Errorf("Decode(Encode(%q)) = %q", text, got)
		}
		chars += len([]rune(text))
		ids += len(enc)
	}
	// Frequent words are single tokens.
	for _, w := range []string{"▁operating", "▁system", "<h1>", "</p>", "▁the"} {
		if _, ok := tok.ID(w); !ok {
			t.Errorf("%q was not learned as one token", w)
		}
	}
	if r := float64(chars) / float64(ids); r < 2.5 {
		t.Errorf("compression %.2f chars/token, want ≥ 2.5 on in-domain text", r)
	}
	// Characters never seen fall back to bytes, not unk.
	for _, id := range tok.Encode("東") {
		if id == MiniUnk {
			t.Error("unseen character encoded as <unk>")
		}
	}
}

func TestTrainDeterministicAndMinFrequency(t *testing.T) {
	corpus := miniCorpus(100)
	a, err := Train(Slice(corpus), TrainOptions{VocabSize: 500})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Train(Slice(corpus), TrainOptions{VocabSize: 500})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.TokenizerJSON, b.TokenizerJSON) {
		t.Error("two trainings of the same corpus differ")
	}
	// A huge minimum frequency stops merging early: fewer tokens than asked.
	c, err := Train(Slice(corpus), TrainOptions{VocabSize: 5000, MinFrequency: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if c.Merges != 0 || c.VocabSize != len(MiniSpecialTokens)+256 {
		t.Errorf("MinFrequency huge: %d merges, vocab %d", c.Merges, c.VocabSize)
	}
	if _, err := Train(Slice(nil), TrainOptions{}); err == nil {
		t.Error("empty corpus: want error")
	}
	if _, err := Train(Slice(corpus), TrainOptions{VocabSize: 100}); err == nil {
		t.Error("vocab smaller than specials+bytes: want error")
	}
}

func TestTrainSaveLoad(t *testing.T) {
	tr, err := Train(Slice(miniCorpus(50)), TrainOptions{VocabSize: 400})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := tr.Save(dir); err != nil {
		t.Fatal(err)
	}
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tok.BOS() != MiniBOS || tok.EOS() != MiniEOS {
		t.Errorf("BOS %d EOS %d", tok.BOS(), tok.EOS())
	}
}
