package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"
)

// statusLine is a long task's progress on w: a line redrawn in place on a terminal,
// a plain line every few seconds otherwise (logs, pipes), other text written above
// it. pull's download bar and loadEngine's weight counts (weightNotes) share it; its
// owner locks it.
type statusLine struct {
	w     io.Writer
	tty   bool
	last  time.Time // when the last line was due
	drawn bool      // a line is drawn in place on the terminal's last line
}

func newStatusLine(w io.Writer) statusLine {
	s := statusLine{w: w}
	if f, ok := w.(*os.File); ok {
		s.tty = term.IsTerminal(int(f.Fd()))
	}
	return s
}

// due reports whether a line is due — one each 200 ms on a terminal, each 5 s
// otherwise, a final one always — and if so starts the next interval.
func (s *statusLine) due(final bool) bool {
	interval := 5 * time.Second
	if s.tty {
		interval = 200 * time.Millisecond
	}
	if !final && time.Since(s.last) < interval {
		return false
	}
	s.last = time.Now()
	return true
}

// draw writes line in place (on a terminal; elsewhere the owner writes plain lines).
func (s *statusLine) draw(line string) {
	fmt.Fprint(s.w, "\r\033[K"+line)
	s.drawn = true
}

// clear erases a line drawn in place, for text to go there instead.
func (s *statusLine) clear() {
	if s.drawn {
		fmt.Fprint(s.w, "\r\033[K")
		s.drawn = false
	}
}

// keep leaves a line drawn in place as it is, the cursor on the next line.
func (s *statusLine) keep() {
	if s.drawn {
		fmt.Fprintln(s.w)
		s.drawn = false
	}
}
