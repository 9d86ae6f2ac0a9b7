package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/darkroomlabs/darkroom/app/api"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/chat"
)

// thinkingAsked reads whether a chat request turns m's thinking on:
// reasoning_effort "low", "medium" or "high" (OpenAI's), or
// chat_template_kwargs {"enable_thinking": true} (vLLM's, for Gemma 4); both
// given must agree, and a model that does not think (Model.NoThinking) is not
// asked to.
func thinkingAsked(cr *api.ChatRequest, m Model) (bool, error) {
	on, param, err := thinkingFields(cr)
	if err == nil && on && m.NoThinking != "" {
		return false, &badRequest{param, fmt.Sprintf("%s: %s; leave %s out", m.ID, m.NoThinking, param)}
	}
	return on, err
}

// thinkingFields reads the fields that turn thinking on, and names the one
// that did.
func thinkingFields(cr *api.ChatRequest) (on bool, param string, err error) {
	var effort, kwarg *bool
	if e := cr.ReasoningEffort; e != nil {
		switch *e {
		case "low", "medium", "high":
			effort = new(bool)
			*effort = true
		case "none", "minimal":
			effort = new(bool)
		default:
			return false, "", &badRequest{"reasoning_effort", fmt.Sprintf(`reasoning_effort %q: want "none", "minimal", "low", "medium" or "high" `+
				`(Gemma 4 thinks or does not: "low" and above turn its thinking on)`, clip(*e, 40))}
		}
	}
	if raw, ok := cr.ChatTemplateKwargs["enable_thinking"]; ok {
		var on bool
		if err := json.Unmarshal(raw, &on); err != nil {
			return false, "", &badRequest{"chat_template_kwargs.enable_thinking", "chat_template_kwargs.enable_thinking must be true or false"}
		}
		kwarg = &on
	}
	switch {
	case effort != nil && kwarg != nil && *effort != *kwarg:
		return false, "", &badRequest{"reasoning_effort", fmt.Sprintf("reasoning_effort %q and chat_template_kwargs.enable_thinking %v disagree: send one of them",
			*cr.ReasoningEffort, *kwarg)}
	case effort != nil:
		return *effort, "reasoning_effort", nil
	case kwarg != nil:
		return *kwarg, "chat_template_kwargs.enable_thinking", nil
	}
	return false, "", nil
}

// thoughtLabel opens a thought channel's text: <|channel>thought\n….
const thoughtLabel = "thought\n"

// thoughtSplitter divides a streamed answer, fed as the deltas of its text in
// order, into its thought and its answer, as chat.Parse divides a whole one:
// what is inside <|channel>thought\n … <channel|> is thought, the rest answer,
// each without the whitespace around it. It holds back what may still turn
// out to be a marker, a label or trailing whitespace.
type thoughtSplitter struct {
	held      string // text fed but not yet read: it may be the start of a marker or of the label
	inThought bool
	labelled  bool      // inside a thought, its "thought\n" label is past
	began     [2]bool   // text given out on side k (0 answer, 1 this thought channel)
	pend      [2]string // side k's trailing whitespace, given out only if more text follows
	thoughts  int       // thought channels with text, closed (Parse joins them with "\n")
}

// splitterFor is the splitter of req's answer: nil (all answer) unless
// thinking is on.
func splitterFor(req *engine.Request) *thoughtSplitter {
	if !req.Thinking {
		return nil
	}
	return new(thoughtSplitter)
}

// feed takes the next delta (final: the answer's text is whole) and returns
// the thought and answer text that can be given out now; a nil splitter gives
// the delta as answer.
func (s *thoughtSplitter) feed(delta string, final bool) (thought, answer string) {
	if s == nil {
		return "", delta
	}
	buf := s.held + delta
	s.held = ""
	var out [2]strings.Builder
	give := func(k int, text string) {
		if !s.began[k] {
			if text = strings.TrimLeftFunc(text, unicode.IsSpace); text == "" {
				return
			}
			if k == 1 && s.thoughts > 0 {
				out[k].WriteString("\n") // a second channel's thought, joined as Parse joins them
			}
			s.began[k] = true
		}
		text = s.pend[k] + text
		body := strings.TrimRightFunc(text, unicode.IsSpace)
		out[k].WriteString(body)
		s.pend[k] = text[len(body):]
	}
	for buf != "" {
		if !s.inThought {
			i := strings.Index(buf, chat.ChannelStart)
			if i < 0 {
				keep := heldSuffix(buf, []string{chat.ChannelStart, chat.ChannelEnd}, final)
				give(0, strings.ReplaceAll(buf[:len(buf)-len(keep)], chat.ChannelEnd, ""))
				s.held = keep
				break
			}
			give(0, strings.ReplaceAll(buf[:i], chat.ChannelEnd, ""))
			buf = buf[i+len(chat.ChannelStart):]
			s.inThought, s.labelled = true, false
			s.began[1] = false
			continue
		}
		if !s.labelled {
			switch {
			case strings.HasPrefix(buf, thoughtLabel):
				buf = buf[len(thoughtLabel):]
			case strings.HasPrefix(buf, "thought") && (len(buf) > len("thought") || final):
				buf = buf[len("thought"):]
			case strings.HasPrefix(thoughtLabel, buf) && !final:
				s.held = buf // the label may still be coming
				return out[1].String(), out[0].String()
			}
			s.labelled = true
		}
		j := strings.Index(buf, chat.ChannelEnd)
		if j < 0 {
			keep := heldSuffix(buf, []string{chat.ChannelEnd}, final)
			give(1, buf[:len(buf)-len(keep)])
			s.held = keep
			break
		}
		give(1, buf[:j])
		if s.began[1] {
			s.thoughts++
		}
		s.pend[1] = "" // a thought's trailing whitespace, dropped as Parse trims it
		buf = buf[j+len(chat.ChannelEnd):]
		s.inThought = false
	}
	return out[1].String(), out[0].String()
}

// heldSuffix is the end of text to hold back until more is fed: the start of
// one of markers (nothing where the text is final).
func heldSuffix(text string, markers []string, final bool) string {
	if final {
		return ""
	}
	return text[cutPartial(text, len(text), markers):]
}
