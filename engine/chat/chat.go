// Package chat owns the Gemma 4 chat format that DiffusionGemma uses: turning a
// conversation into the prompt text (or token ids) the model expects, and
// splitting a generated answer into its thought and its final text.
//
// The format (Gemma 4's chat_template.jinja, which the -it checkpoint ships):
//
//	<bos><|turn>system\n[<|think|>\n]SYSTEM<turn|>\n
//	<|turn>user\nUSER<turn|>\n
//	<|turn>model\nANSWER<turn|>\n        (earlier model turns, thoughts stripped)
//	<|turn>model\n[<|channel>thought\n<channel|>]   (generation prompt)
//
// Thinking on puts `<|think|>\n` at the top of the system turn (a system turn
// is created if there is none). Thinking off prefills an empty thought channel
// after the generation prompt, so the model answers directly. Contents are
// trimmed of surrounding whitespace, as the template's `| trim` does.
//
// Only the template writes control tokens: Encode tokenizes every message as
// plain text, so "<turn|>" or "<eos>" typed by a user stays text and cannot
// forge a turn boundary.
package chat

import (
	"fmt"
	"strings"
)

// The Gemma 4 control tokens the format uses.
const (
	BOS          = "<bos>"
	TurnStart    = "<|turn>"
	TurnEnd      = "<turn|>"
	Think        = "<|think|>"
	ChannelStart = "<|channel>"
	ChannelEnd   = "<channel|>"
	// EmptyThought is the prefilled, empty thought channel of thinking-off prompts.
	EmptyThought = ChannelStart + "thought\n" + ChannelEnd
)

// Message is one turn of a conversation. Role is "system", "user" or "model"
// ("assistant" is accepted as "model", "developer" as "system").
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Options controls Format.
type Options struct {
	// Thinking enables the model's thought channel.
	Thinking bool
	// NoGenerationPrompt leaves out the trailing open model turn (for
	// formatting a finished conversation, e.g. training data).
	NoGenerationPrompt bool
	// NoBOS leaves out the leading "<bos>" text (for callers that prepend the
	// BOS id themselves).
	NoBOS bool
}

// Tokenizer is what Encode needs from engine/tokenizer.
type Tokenizer interface {
	// Encode recognizes the control tokens spelled in text (the template's).
	Encode(text string) []int
	// EncodeText reads text as plain text: a "<turn|>" in it is characters.
	EncodeText(text string) []int
	BOS() int
}

// Format renders msgs as Gemma 4 prompt text. A system message may only come
// first; roles other than system/user/model are an error.
func Format(msgs []Message, opts Options) (string, error) {
	var b strings.Builder
	err := render(msgs, opts, func(s string, _ bool) { b.WriteString(s) })
	if err != nil {
		return "", err
	}
	return b.String(), nil
}

// render writes msgs in the format piece by piece: control pieces (one
// control token each, written by the template) and text pieces (the role
// names, newlines and the messages' contents).
func render(msgs []Message, opts Options, emit func(s string, control bool)) error {
	ctl := func(s string) { emit(s, true) }
	text := func(s string) { emit(s, false) }
	if !opts.NoBOS {
		ctl(BOS)
	}
	rest := msgs
	hasSystem := len(msgs) > 0 && normRole(msgs[0].Role) == "system"
	if hasSystem || opts.Thinking {
		ctl(TurnStart)
		text("system\n")
		if opts.Thinking {
			ctl(Think)
			text("\n")
		}
		if hasSystem {
			text(strings.TrimSpace(msgs[0].Content))
			rest = msgs[1:]
		}
		ctl(TurnEnd)
		text("\n")
	}
	for i, m := range rest {
		role := normRole(m.Role)
		content := strings.TrimSpace(m.Content)
		switch role {
		case "user":
		case "model":
			content = StripThinking(content)
		case "system":
			return fmt.Errorf("chat: message %d: a system message may only come first", i+len(msgs)-len(rest))
		default:
			return fmt.Errorf("chat: message %d: unknown role %q (want system, user or model)", i+len(msgs)-len(rest), m.Role)
		}
		ctl(TurnStart)
		text(role + "\n" + content)
		ctl(TurnEnd)
		text("\n")
	}
	if !opts.NoGenerationPrompt {
		generationPrompt(opts.Thinking, emit)
	}
	return nil
}

// GenerationPrompt is the text that opens the model's turn.
func GenerationPrompt(thinking bool) string {
	var b strings.Builder
	generationPrompt(thinking, func(s string, _ bool) { b.WriteString(s) })
	return b.String()
}

func generationPrompt(thinking bool, emit func(s string, control bool)) {
	emit(TurnStart, true)
	emit("model\n", false)
	if !thinking {
		emit(ChannelStart, true)
		emit("thought\n", false)
		emit(ChannelEnd, true)
	}
}

// UserPrompt formats a single user turn with the generation prompt, the
// common case of a one-shot request (BOS text included).
func UserPrompt(text string, thinking bool) string {
	s, _ := Format([]Message{{Role: "user", Content: text}}, Options{Thinking: thinking}) // cannot fail: fixed role
	return s
}

// Encode formats msgs and tokenizes them: the BOS id followed by the ids of
// the formatted text. Control tokens come from the template only: the text
// between two of them (a role name, a message) is encoded as plain text, so a
// message that spells "<turn|>" cannot end its turn or open another. For text
// that spells no control token the ids are those of encoding Format's output.
func Encode(tok Tokenizer, msgs []Message, opts Options) ([]int, error) {
	opts.NoBOS = true
	var ids []int
	if bos := tok.BOS(); bos >= 0 {
		ids = append(ids, bos)
	}
	var run strings.Builder // text since the last control token, encoded as one stretch
	flush := func() {
		if run.Len() > 0 {
			ids = append(ids, tok.EncodeText(run.String())...)
			run.Reset()
		}
	}
	err := render(msgs, opts, func(s string, control bool) {
		if !control {
			run.WriteString(s)
			return
		}
		flush()
		ids = append(ids, tok.Encode(s)...)
	})
	if err != nil {
		return nil, err
	}
	flush()
	return ids, nil
}

func normRole(r string) string {
	switch r {
	case "assistant":
		return "model"
	case "developer":
		return "system"
	}
	return r
}

// StripThinking removes every thought channel `<|channel>…<channel|>` from a
// model answer (an unclosed channel is dropped to the end) and trims it, as
// the template does for earlier model turns.
func StripThinking(s string) string {
	for {
		i := strings.Index(s, ChannelStart)
		if i < 0 {
			break
		}
		j := strings.Index(s[i:], ChannelEnd)
		if j < 0 {
			s = s[:i]
			break
		}
		s = s[:i] + s[i+j+len(ChannelEnd):]
	}
	return strings.TrimSpace(s)
}

// Answer is a generated model turn split into its parts.
type Answer struct {
	Thought  string // the thought channel's text, without the "thought\n" label
	Text     string // the final answer
	Complete bool   // the turn was closed by <turn|> (or EOS text)
	// ThoughtOpen reports a thought channel that was still open where the
	// text ended (a thinking model cut off mid-thought).
	ThoughtOpen bool
}

// Parse splits generated text (what follows the generation prompt) into the
// thought and the answer. It stops at the first `<turn|>` (or "<eos>"), and
// ignores everything after it.
func Parse(generated string) Answer {
	var a Answer
	s := generated
	if i := indexAny(s, TurnEnd, "<eos>"); i >= 0 {
		s = s[:i]
		a.Complete = true
	}
	var thoughts []string
	var text strings.Builder
	for {
		i := strings.Index(s, ChannelStart)
		if i < 0 {
			text.WriteString(s)
			break
		}
		text.WriteString(s[:i])
		s = s[i+len(ChannelStart):]
		j := strings.Index(s, ChannelEnd)
		body := s
		if j >= 0 {
			body, s = s[:j], s[j+len(ChannelEnd):]
		} else {
			s = ""
			a.ThoughtOpen = true
		}
		body = strings.TrimPrefix(body, "thought")
		body = strings.TrimPrefix(body, "\n")
		if t := strings.TrimSpace(body); t != "" {
			thoughts = append(thoughts, t)
		}
		if j < 0 {
			break
		}
	}
	a.Thought = strings.Join(thoughts, "\n")
	a.Text = strings.TrimSpace(strings.ReplaceAll(text.String(), ChannelEnd, ""))
	return a
}

func indexAny(s string, subs ...string) int {
	best := -1
	for _, sub := range subs {
		if i := strings.Index(s, sub); i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	return best
}
