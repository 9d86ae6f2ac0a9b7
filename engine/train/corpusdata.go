package train

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/chat"
	"github.com/darkroomlabs/darkroom/engine/tokenizer"
)

// Record is one line of the corpus files train.jsonl / heldout.jsonl (written by
// engine/train/corpus): the trainer applies the chat template.
type Record struct {
	Kind   string `json:"kind"`             // "page", "chat", "desktop"
	Source string `json:"source,omitempty"` // the dictionary or extra source it comes from (corpus.Example's)
	Title  string `json:"title"`
	System string `json:"system,omitempty"`
	Prompt string `json:"prompt"`
	Answer string `json:"answer"`
	// Loss is which of the objective's two losses the record trains: both (""),
	// LossDiffusion (the decoder's only: the polaroid learns the answer, the
	// printer does not) or LossAR (the encoder's next-token loss only).
	// Distillation with DistillOptions.Beside writes them.
	Loss string `json:"loss,omitempty"`
	// Held is the start of Answer that is held, as engine.Request.Opening holds it
	// at inference: the decoder sees its tokens clean and is not asked for them
	// (their diffusion loss weighs 0), so it learns to continue them, not to
	// write them. Diffusion-only records (Loss LossDiffusion); Distill with Lead
	// and Beside writes it (the heading and the real entry's first sentence).
	Held string `json:"held,omitempty"`
}

// The values of Record.Loss and Example.Loss besides "" (both losses).
const (
	LossDiffusion = "diffusion" // the decoder's denoising loss only
	LossAR        = "ar"        // the encoder's next-token loss only
)

// Messages is the record's prompt as the app sends it: its system turn, when it
// has one, then the user turn.
func (r Record) Messages() []engine.Message {
	if r.System == "" {
		return []engine.Message{{Role: "user", Content: r.Prompt}}
	}
	return []engine.Message{{Role: "system", Content: r.System}, {Role: "user", Content: r.Prompt}}
}

// ReadRecords reads a JSONL corpus file.
func ReadRecords(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read corpus: %w", err)
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}

// Tokenize turns records into examples exactly as the engine will prompt: the
// chat template with thinking off (system turn when the record has one, the user
// turn, the generation prompt with its empty thought channel), BOS id first; the
// answer is the trimmed answer text followed by the end-of-turn token.
func Tokenize(tok *tokenizer.Tokenizer, recs []Record) ([]Example, error) {
	turnEnd := tok.Specials().TurnEnd
	if turnEnd < 0 {
		return nil, fmt.Errorf("tokenize corpus: the tokenizer has no %s token", chat.TurnEnd)
	}
	out := make([]Example, 0, len(recs))
	for i, r := range recs {
		if r.Loss != "" && r.Loss != LossDiffusion && r.Loss != LossAR {
			return nil, fmt.Errorf("tokenize corpus record %d (%q): loss %q is not %q, %q or empty (both)", i, r.Title, r.Loss, LossDiffusion, LossAR)
		}
		prompt, err := chat.Encode(tok, r.Messages(), chat.Options{})
		if err != nil {
			return nil, fmt.Errorf("tokenize corpus record %d (%q): %w", i, r.Title, err)
		}
		text := strings.TrimSpace(r.Answer)
		var answer []int
		held := 0
		switch {
		case r.Held == "":
			answer = tok.Encode(text)
		case r.Loss != LossDiffusion:
			return nil, fmt.Errorf("tokenize corpus record %d (%q): a held opening is for a %q record only (its loss weighs 0 there), this one's loss is %q",
				i, r.Title, LossDiffusion, r.Loss)
		case !strings.HasPrefix(text, r.Held):
			return nil, fmt.Errorf("tokenize corpus record %d (%q): the held opening %q does not begin the answer", i, r.Title, r.Held)
		default: // tokenized apart, as the engine tokenizes an opening
			answer = tok.Encode(r.Held)
			held = len(answer)
			answer = append(answer, tok.Encode(text[len(r.Held):])...)
		}
		answer = append(answer, turnEnd)
		var copied []int
		if title := assets.CleanLine(r.Title); title != "" {
			copied = titleCopies(answer, tok.Encode(title), tok.Encode(" "+title))
		}
		out = append(out, Example{Title: r.Title, Kind: r.Kind, Prompt: prompt, Answer: answer, Copied: copied, Loss: r.Loss, Held: held})
	}
	return out, nil
}

// LoadCorpus reads dir/train.jsonl and dir/heldout.jsonl and tokenizes them.
func LoadCorpus(dir string, tok *tokenizer.Tokenizer) (Data, error) {
	tr, err := ReadRecords(filepath.Join(dir, "train.jsonl"))
	if err != nil {
		return Data{}, err
	}
	ho, err := ReadRecords(filepath.Join(dir, "heldout.jsonl"))
	if err != nil {
		return Data{}, err
	}
	d := Data{EOS: tok.EOS(), Pad: tok.Pad()}
	if d.EOS < 0 || d.Pad < 0 {
		return Data{}, fmt.Errorf("load corpus: the tokenizer lacks <eos> or <pad>")
	}
	if d.Train, err = Tokenize(tok, tr); err != nil {
		return Data{}, err
	}
	if d.Heldout, err = Tokenize(tok, ho); err != nil {
		return Data{}, err
	}
	return d, nil
}

// LengthStats summarizes prompt and answer token lengths (for sizing buckets).
type LengthStats struct {
	N                               int
	PromptMax, PromptP99            int
	AnswerP50, AnswerP90, AnswerP99 int
	AnswerMax                       int
	MultiCanvas                     int // answers (with end-of-turn) longer than one canvas
}

// Lengths computes LengthStats for canvas length c.
func Lengths(ex []Example, c int) LengthStats {
	var ps, as []int
	st := LengthStats{N: len(ex)}
	for _, e := range ex {
		ps = append(ps, len(e.Prompt))
		as = append(as, len(e.Answer))
		if len(e.Answer) > c {
			st.MultiCanvas++
		}
	}
	if len(ex) == 0 {
		return st
	}
	sort.Ints(ps)
	sort.Ints(as)
	q := func(v []int, f float64) int { return v[min(len(v)-1, int(f*float64(len(v))))] }
	st.PromptMax, st.PromptP99 = ps[len(ps)-1], q(ps, 0.99)
	st.AnswerP50, st.AnswerP90, st.AnswerP99, st.AnswerMax = q(as, 0.5), q(as, 0.9), q(as, 0.99), as[len(as)-1]
	return st
}
