// Package chat owns the Gemma 4 chat format that DiffusionGemma uses: turning a
// conversation into the prompt text (or token ids) the model expects, and
// splitting a generated answer into its thought and its final text.
//
// The format (Gemma 4 chat_template.jinja, reference diffusiongemma.md §6):
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
	Encode(text string) []int
	BOS() int
}

// Format renders msgs as Gemma 4 prompt text. A system message may only come
// first; roles other than system/user/model are an error.
func Format(msgs []Message, opts Options) (string, error) {
	var b strings.Builder
	if !opts.NoBOS {
		b.WriteString(BOS)
	}
	rest := msgs
	hasSystem := len(msgs) > 0 && normRole(msgs[0].Role) == "system"
	if hasSystem || opts.Thinking {
		b.WriteString(TurnStart + "system\n")
		if opts.Thinking {
			b.WriteString(Think + "\n")
		}
		if hasSystem {
			b.WriteString(strings.TrimSpace(msgs[0].Content))
			rest = msgs[1:]
		}
		b.WriteString(TurnEnd + "\n")
	}
	for i, m := range rest {
		role := normRole(m.Role)
		content := strings.TrimSpace(m.Content)
		switch role {
		case "user":
		case "model":
			content = StripThinking(content)
		case "system":
			return "", fmt.Errorf("chat: message %d: a system message may only come first", i+len(msgs)-len(rest))
		default:
			return "", fmt.Errorf("chat: message %d: unknown role %q (want system, user or model)", i+len(msgs)-len(rest), m.Role)
		}
		b.WriteString(TurnStart + role + "\n" + content + TurnEnd + "\n")
	}
	if !opts.NoGenerationPrompt {
		b.WriteString(GenerationPrompt(opts.Thinking))
	}
	return b.String(), nil
}

// GenerationPrompt is the text that opens the model's turn.
func GenerationPrompt(thinking bool) string {
	if thinking {
		return TurnStart + "model\n"
	}
	return TurnStart + "model\n" + EmptyThought
}

// UserPrompt formats a single user turn with the generation prompt, the
// common case of a one-shot request (BOS text included).
func UserPrompt(text string, thinking bool) string {
	s, _ := Format([]Message{{Role: "user", Content: text}}, Options{Thinking: thinking}) // cannot fail: fixed role
	return s
}

// Encode formats msgs and tokenizes them: the BOS id followed by the ids of
// the formatted text (without BOS text).
func Encode(tok Tokenizer, msgs []Message, opts Options) ([]int, error) {
	opts.NoBOS = true
	text, err := Format(msgs, opts)
	if err != nil {
		return nil, err
	}
	ids := tok.Encode(text)
	if bos := tok.BOS(); bos >= 0 {
		ids = append([]int{bos}, ids...)
	}
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
