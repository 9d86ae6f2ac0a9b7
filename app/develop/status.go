package develop

import (
	"fmt"
	"strings"

	"github.com/darkroomlabs/darkroom/app/plural"
	"github.com/darkroomlabs/darkroom/engine"
)

// Status is the status line under the page after ev (call it after Text(ev)):
// where the generation is, its forward passes, the time and the tokens per
// second, counting the committed tokens and those the current canvas has
// accepted so far. Every generation's first event follows the prompt's encoder
// pass, so zero forward passes means a remote server that reports none: those
// are unknown, and the line leaves them out.
func (d *Draft) Status(ev engine.Event) string {
	tokens := len(ev.Committed) + d.Accepted()
	secs := ev.Elapsed.Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(tokens) / secs
	}
	passes := ""
	if ev.ForwardPasses > 0 {
		passes = " · " + plural.Count(ev.ForwardPasses, "forward pass", "forward passes")
	}
	switch ev.Kind {
	case engine.EventStep:
		if ev.Guidance && ev.Round > 0 { // the causal head revising the canvas's words: not a step
			return fmt.Sprintf("Developing · canvas %d, guidance round %d after %s%s · %.1f s · %.1f tokens/s",
				ev.Canvas+1, ev.Round, plural.Count(ev.Step-ev.Round, "step", "steps"), passes, secs, rate)
		}
		steps := ev.Steps
		if steps == 0 {
			// A remote server's events do not count them: forward passes are
			// the denoising steps plus one encoder pass for the prompt and one
			// per committed canvas (where no guidance round ran).
			steps = max(ev.ForwardPasses-1-ev.Canvas, ev.Step)
		}
		return fmt.Sprintf("Developing · canvas %d, step %d (%s so far)%s · %.1f s · %.1f tokens/s",
			ev.Canvas+1, ev.Step, plural.Count(steps, "step", "steps"), passes, secs, rate)
	case engine.EventToken:
		return fmt.Sprintf("Printing · %s%s · %.1f s · %.1f tokens/s", plural.Count(tokens, "token", "tokens"), passes, secs, rate)
	case engine.EventPrepare: // the graph path building its graphs: on a GPU, seconds to a minute, once
		return fmt.Sprintf("Preparing the model for this device (once, on its first run) · %.1f s", secs)
	case engine.EventPrompt: // a long prompt (a long chat, a pasted file): a minute or more for a big model on a CPU
		pct := 0
		if ev.PromptTokens > 0 {
			pct = 100 * ev.PromptRead / ev.PromptTokens
		}
		return fmt.Sprintf("Reading the prompt · %d%% of %s tokens · %.1f s", pct, thousands(ev.PromptTokens), secs)
	default:
		return fmt.Sprintf("Developing · canvas %d committed%s · %.1f s · %.1f tokens/s", ev.Canvas+1, passes, secs, rate)
	}
}

// LeadNote ends the status line of a page or answer that holds its entry's
// text (assets.Leads, engine.Result.LeadHeld), so that the entry is not taken
// for the model's writing: "(78 held)" beside the token count says how much.
const LeadNote = "text from the entry"

// ReplyNote ends the status line of an answer that is the model's set reply,
// held whole once the model began it (engine.Result.Replied: Darkroom Mini's
// Library answer), so that its even wording is not taken for the model's.
const ReplyNote = "set answer, held once begun"

// OwnNote ends the status line of a page or answer that a model whose folder
// holds entries (assets.Leads: Darkroom Mini) wrote alone — on a title or
// term that is not one of them, or one whose entry did not fit the answer —
// so that the model's invention is not taken for an entry: its pages read
// like the entries and are not true.
const OwnNote = "the model's own writing, not an entry: often wrong"

// LeadSuffix is " · " and LeadNote where res held its lead (ReplyNote where
// it held its reply), else, where the model's folder holds entries (entries),
// OwnNote, else "": DoneStatus ends with it, and the CLI's summary lines
// (wiki, generate) too.
func LeadSuffix(res *engine.Result, entries bool) string {
	switch {
	case res.LeadHeld:
		return " · " + LeadNote
	case res.Replied:
		return " · " + ReplyNote
	case entries && len(res.Tokens) > res.HeldTokens:
		return " · " + OwnNote
	}
	return ""
}

// TokenCount is how many tokens res holds, as the status lines say it: "78
// tokens", with "(78 held)" after it when the entry's text or the set reply
// was held — most of an answer may be that text, and the rate counts the
// rest. DoneStatus and the CLI's summary lines say it so.
func TokenCount(res *engine.Result) string {
	tokens := plural.Count(len(res.Tokens), "token", "tokens")
	if (res.LeadHeld || res.Replied) && res.HeldTokens > 0 {
		tokens += fmt.Sprintf(" (%d held)", res.HeldTokens)
	}
	return tokens
}

// HeldWhole reports whether res is an entry held whole (engine.Request.LeadEnds):
// its every token the entry's, no forward pass — written in no mode, which the
// status lines therefore do not name.
func HeldWhole(res *engine.Result) bool {
	return res.LeadHeld && res.ForwardPasses == 0 && res.HeldTokens == len(res.Tokens)
}

// DoneStatus is the status line of a finished generation, by a model whose
// folder holds entries or not (LeadSuffix). A remote server that is not a
// Darkroom streams no steps or forward passes (res has none): those are
// unknown, not zero, so the line leaves them out; an answer held whole (an
// entry, engine.Request.LeadEnds) has none either, and no canvas.
func DoneStatus(res *engine.Result, entries bool) string {
	state, rest := doneParts(res)
	return strings.Join(append([]string{state}, rest...), " · ") + LeadSuffix(res, entries)
}

// PageDoneStatus is the status line of a page screen (the Encyclopedia, the
// Desktop) when res is done: DoneStatus with the mode's label right after the
// state ("Done · Printer (AR) · 213 tokens …"), since at the end an 800-pixel
// window cut it off. A page that is its entry whole (HeldWhole) was written in no
// mode: the line says it is the entry's text there ("Done · text from the entry ·
// 232 tokens (232 held) …").
func PageDoneStatus(res *engine.Result, label string, entries bool) string {
	state, rest := doneParts(res)
	if HeldWhole(res) {
		return strings.Join(append([]string{state, LeadNote}, rest...), " · ")
	}
	return strings.Join(append([]string{state, label}, rest...), " · ") + LeadSuffix(res, entries)
}

// doneParts are the status line of a finished generation (DoneStatus) without
// what follows its numbers: the state ("Done", "Stopped", …) and the numbers.
func doneParts(res *engine.Result) (state string, rest []string) {
	steps := 0
	for _, c := range res.Canvases {
		steps += c.Steps
	}
	state = "Done"
	switch res.StopReason {
	case engine.StopCancelled:
		state = "Stopped"
	case engine.StopMaxTokens:
		state = "Done (length limit)"
	}
	tokens, canvases := TokenCount(res), plural.Count(len(res.Canvases), "canvas", "canvases")
	var parts []string
	switch {
	case res.ForwardPasses == 0 && steps == 0 && res.HeldTokens > 0 && res.HeldTokens == len(res.Tokens):
		parts = append(parts, tokens)
	case res.ForwardPasses == 0 && steps == 0:
		parts = append(parts, fmt.Sprintf("%s (%s)", tokens, canvases))
	case len(res.Canvases) == 0: // the printer (AR), or stopped before a first canvas: no steps to count
		parts = append(parts, tokens, plural.Count(res.ForwardPasses, "forward pass", "forward passes"))
	default:
		parts = append(parts, fmt.Sprintf("%s in %s (%s)", tokens, plural.Count(steps, "step", "steps"), canvases),
			plural.Count(res.ForwardPasses, "forward pass", "forward passes"))
	}
	parts = append(parts, fmt.Sprintf("%.2f s", res.Elapsed.Seconds()))
	if rate := Rate(res); rate != "" {
		parts = append(parts, rate)
	}
	return state, parts
}

// Rate is res's rate of written tokens, "440.0 tokens/s", or "" where the
// model wrote none because all of them were held (the Library answer, a lead
// that fills the answer): "0.0 tokens/s" there read as a fault. DoneStatus and
// the CLI's summary lines say it so.
func Rate(res *engine.Result) string {
	if res.HeldTokens > 0 && res.HeldTokens >= len(res.Tokens) {
		return ""
	}
	return fmt.Sprintf("%.1f tokens/s", res.TokensPerS)
}
