// Package chat owns the Gemma 4 chat format that DiffusionGemma uses: turning a
// conversation into the prompt text (or token ids) the model expects, and
// splitting a generated answer into its thought, its final text and its tool
// calls.
//
// The format (Gemma 4's chat_template.jinja, which the -it checkpoint ships; the
// updated official template of April 2026, as llama.cpp keeps it in
// models/templates/google-gemma-4-31B-it.jinja):
//
//	<bos><|turn>system\n[<|think|>\n]SYSTEM[<|tool>DECLARATION<tool|>…]<turn|>\n
//	<|turn>user\nUSER<turn|>\n
//	<|turn>model\nANSWER<turn|>\n        (earlier model turns, thoughts stripped)
//	<|turn>model\n<|tool_call>CALL<tool_call|><|tool_response>RESULT<tool_response|>[ANSWER<turn|>\n]
//	<|turn>model\n[<|channel>thought\n<channel|>]   (generation prompt)
//
// Thinking on puts `<|think|>\n` at the top of the system turn (a system turn
// is created if there is none; so do tools). Thinking off prefills an empty
// thought channel after the generation prompt, so the model answers directly.
// Contents are trimmed of surrounding whitespace, as the template's `| trim`
// does. Tools (tools.go) are declared in the system turn; a model message's
// tool calls and the tool messages after it (their results) share the
// model's turn, which stays open while the model has results to read: the
// generation goes on in it, with no new turn and no prefilled thought.
//
// Only the template writes control tokens: Encode tokenizes every message as
// plain text, so "<turn|>" or "<eos>" typed by a user stays text and cannot
// forge a turn boundary; the same holds for tool declarations, arguments and
// results, whose strings sit between template-written `<|"|>` delimiters.
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

// Message is one message of a conversation. Role is "system", "user", "model"
// or "tool" ("assistant" is accepted as "model", "developer" as "system").
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ToolCalls are a model message's calls, written before its Content.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Reasoning is a model message's thought, written back (in its thought
	// channel, before its calls) only where the message has tool calls and
	// comes after the last user message: the model's thinking within the turn
	// it is still working on, as the template keeps it.
	Reasoning string `json:"reasoning,omitempty"`
	// ToolCallID (a tool message's) names the call it answers; Name is the
	// function's, read where no call has that ID.
	ToolCallID string `json:"tool_call_id,omitempty"`
	Name       string `json:"name,omitempty"`
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
	// Tools are the functions the model may call, declared in the system turn.
	Tools []Tool
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
// first, a tool message only after a model message with tool calls (or another
// tool message); other roles, and tool or function names the format cannot
// carry, are an error.
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
// names, newlines, the messages' contents, tool declarations, calls and
// results). It follows the template's loop: a model message's tool calls,
// then the tool messages after it as their results, in the same turn; a
// model message whose calls have results and no text of its own leaves its
// turn open, and the next model message (or the generation) goes on in it.
func render(msgs []Message, opts Options, emit func(s string, control bool)) error {
	w := writer{emit}
	if !opts.NoBOS {
		w.ctl(BOS)
	}
	rest := msgs
	hasSystem := len(msgs) > 0 && normRole(msgs[0].Role) == "system"
	if hasSystem || opts.Thinking || len(opts.Tools) > 0 {
		w.ctl(TurnStart)
		w.text("system\n")
		if opts.Thinking {
			w.ctl(Think)
			w.text("\n")
		}
		if hasSystem {
			w.text(strings.TrimSpace(msgs[0].Content))
			rest = msgs[1:]
		}
		for i, t := range opts.Tools {
			if err := CheckName(t.Name); err != nil {
				return fmt.Errorf("chat: tool %d: %w", i, err)
			}
			w.ctl(ToolStart)
			w.declaration(t)
			w.ctl(ToolEnd)
		}
		w.ctl(TurnEnd)
		w.text("\n")
	}
	at := len(msgs) - len(rest) // index in msgs of rest[0], for errors
	lastUser := -1              // the last user message's index in rest
	for i, m := range rest {
		if normRole(m.Role) == "user" {
			lastUser = i
		}
	}
	var (
		prevRole string     // the role of the last message that is not a tool's
		calls    []ToolCall // that message's tool calls
		last     string     // how the last message ended: "", "tool_call" (calls, no results) or "tool_response"
	)
	for i, m := range rest {
		role := normRole(m.Role)
		switch role {
		case "tool":
			if len(calls) == 0 {
				return fmt.Errorf("chat: message %d: a tool message must follow the model message that called the tool", i+at)
			}
			continue // written with the calls, below
		case "user", "model":
			if len(m.ToolCalls) > 0 && role != "model" {
				return fmt.Errorf("chat: message %d: only the model's messages call tools", i+at)
			}
		case "system":
			return fmt.Errorf("chat: message %d: a system message may only come first", i+at)
		default:
			return fmt.Errorf("chat: message %d: unknown role %q (want system, user, model or tool)", i+at, m.Role)
		}
		if !(role == "model" && prevRole == "model") { // a model message after the model's goes on in its turn
			w.ctl(TurnStart)
			w.text(role + "\n")
		}
		if m.Reasoning != "" && i > lastUser && len(m.ToolCalls) > 0 {
			w.ctl(ChannelStart)
			w.text("thought\n" + m.Reasoning + "\n")
			w.ctl(ChannelEnd)
		}
		last = ""
		for k, c := range m.ToolCalls {
			if err := CheckName(c.Name); err != nil {
				return fmt.Errorf("chat: message %d: tool call %d: %w", i+at, k, err)
			}
			w.toolCall(c)
			last = "tool_call"
		}
		responded := false
		if len(m.ToolCalls) > 0 {
			for _, r := range rest[i+1:] {
				if normRole(r.Role) != "tool" {
					break
				}
				w.toolResponse(responseName(m.ToolCalls, r), r.Content)
				responded, last = true, "tool_response"
			}
		}
		if role == "model" {
			w.text(StripThinking(m.Content))
		} else {
			w.text(strings.TrimSpace(m.Content))
		}
		switch {
		case last == "tool_call": // calls with no results: the template opens the results
			w.ctl(ToolResponseStart)
		case !(responded && m.Content == ""):
			w.ctl(TurnEnd)
			w.text("\n")
		}
		prevRole, calls = role, m.ToolCalls
	}
	if !opts.NoGenerationPrompt && last == "" {
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
