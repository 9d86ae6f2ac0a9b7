package ui

import (
	"errors"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/download"
	"github.com/darkroomlabs/darkroom/models/hw"
)

// TestLongWorkEndsWithANotification: a download or a conversion that ends
// while the user looks elsewhere — another screen, another window in front —
// says so in a desktop notification, its title and what next; in front on
// the Library, which shows it, and for one the user cancelled, none. A
// 52 GB download ended in silence.
func TestLongWorkEndsWithANotification(t *testing.T) {
	a, _ := libraryApp(t, "http://127.0.0.1:9", download.Options{Interval: 20 * time.Millisecond}, hw.Info{RAMTotal: 64 << 30})
	l := a.Library
	waitFor(t, "the catalog", func() bool { return libraryCardOf(l, catalog.DiffusionGemmaID) != nil })
	c := libraryCardOf(l, catalog.DiffusionGemmaID)
	title := uiRead(func() string { return c.entry.Title })
	event := func(state string, err error) func() {
		return func() { l.onEvent(DownloadEvent{Name: catalog.DiffusionGemmaID, State: state, Err: err}) }
	}
	setState := func(state string) { // the card's state before the event (a rebuilt card's, after a refresh)
		waitFor(t, "the Library's listings", func() bool { return uiRead(func() bool { return l.shown == l.listings.Load() }) })
		waitFor(t, "the card", func() bool { return libraryCardOf(l, catalog.DiffusionGemmaID) != nil })
		c := libraryCardOf(l, catalog.DiffusionGemmaID)
		asUI(func() { c.entry.State = state })
	}

	test.AssertNotificationSent(t, nil, event("done", nil)) // on the Library, in front: it is on screen

	asUI(func() { a.Show("Chat") })
	setState("downloading")
	test.AssertNotificationSent(t, fyne.NewNotification("Download finished", title+" is downloaded and ready to use."), event("done", nil))
	setState("converting")
	test.AssertNotificationSent(t, fyne.NewNotification("Conversion finished", title+" is converted and ready to use."), event("done", nil))
	setState("downloading")
	stalled := download.ErrStalled
	test.AssertNotificationSent(t, fyne.NewNotification("Download failed", libraryProblem("download "+title, stalled)), event("failed", stalled))
	setState("downloading")
	test.AssertNotificationSent(t, nil, event("cancelled", errors.New("canceled")))

	// On the Library but with another window in front.
	asUI(func() { a.Show("Library") })
	a.front = false
	setState("downloading")
	test.AssertNotificationSent(t, fyne.NewNotification("Download finished", title+" is downloaded and ready to use."), event("done", nil))
}
