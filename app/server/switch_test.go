package server

import (
	"errors"
	"strings"
	"testing"
)

func TestSwitch(t *testing.T) {
	starts := 0
	w := &Switch{Options: func() (Options, error) {
		starts++
		return Options{Engine: &fakeGen{final: "<p>x</p>"}}, nil
	}}
	defer w.Close()
	if w.Running() != nil {
		t.Fatal("running before Set")
	}
	u, err := w.Set(true)
	if err != nil || !strings.HasPrefix(u, "http://darkroom-") || !strings.Contains(u, ".localhost:") || !strings.Contains(u, "token=") {
		t.Fatalf("Set(true) = %q, %v", u, err)
	}
	if u2, _ := w.Set(true); u2 != u || starts != 1 {
		t.Errorf("second Set(true) = %q after %d starts: want the same server", u2, starts)
	}
	page, err := w.PageURL("bubble sort")
	if err != nil || !strings.Contains(page, "/wiki/bubble_sort?token=") {
		t.Errorf("PageURL = %q, %v", page, err)
	}
	c := newBrowser() // ?token= sets the cookie the redirect needs
	if resp, err := c.Get(page); err != nil || resp.StatusCode != 200 {
		t.Errorf("GET page: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if u, err := w.Set(false); u != "" || err != nil || w.Running() != nil {
		t.Errorf("Set(false) = %q, %v", u, err)
	}
	if _, err := c.Get(page); err == nil {
		t.Error("the server answers after Set(false)")
	}
	// "Open in browser" while off starts a new server, with a new token.
	page2, err := w.PageURL("Unix")
	if err != nil || starts != 2 || strings.Split(page2, "token=")[1] == strings.Split(page, "token=")[1] {
		t.Errorf("PageURL while off = %q, %v (%d starts)", page2, err, starts)
	}

	bad := &Switch{Options: func() (Options, error) { return Options{}, errors.New("no model") }}
	if _, err := bad.Set(true); err == nil || bad.Running() != nil {
		t.Errorf("failed start: %v", err)
	}
}
