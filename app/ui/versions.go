package ui

// otherVersion is the one other version of what a screen shows — the chat
// answer or the Encyclopedia page that a regenerate replaced — which a button
// brings back ("Previous answer", "Previous version"), and then the one it
// replaced ("Newer …"). Chat and the Encyclopedia each kept the same two
// fields and swap in a shape of their own.
type otherVersion[T any] struct {
	v     *T   // nil: none
	newer bool // v is the newer one: the shown one was brought back
}

// keep holds the version a regenerate replaces (the older one).
func (o *otherVersion[T]) keep(replaced T) { o.v, o.newer = &replaced, false }

// forget drops it: another thing is shown.
func (o *otherVersion[T]) forget() { o.v, o.newer = nil, false }

// has reports whether there is another version.
func (o *otherVersion[T]) has() bool { return o.v != nil }

// swap returns the other version, to show, and keeps shown in its place.
func (o *otherVersion[T]) swap(shown T) T {
	other := *o.v
	o.v, o.newer = &shown, !o.newer
	return other
}

// take returns the other version and forgets it (a regenerate that failed
// or was stopped: the one it was to replace is shown again).
func (o *otherVersion[T]) take() T {
	other := *o.v
	o.forget()
	return other
}

// label is the button's words for the other version of what ("answer",
// "version"): "Previous answer", or after a swap "Newer answer".
func (o *otherVersion[T]) label(what string) string {
	if o.newer {
		return "Newer " + what
	}
	return "Previous " + what
}
