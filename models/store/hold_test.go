package store

import (
	"errors"
	"strings"
	"testing"
)

// TestHold: a model's hold is one holder's at a time (two Stores on one folder
// stand for two processes: the lock is the open file's), the second told what the
// first is doing; released, it can be taken again. HoldAll takes every model's or
// none.
func TestHold(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Open(dir)
	for _, name := range []string{"acme/one", "acme/two"} {
		if err := a.Save(&Manifest{Name: name, State: StateComplete}); err != nil {
			t.Fatal(err)
		}
	}
	release, err := a.Hold("acme/one", "downloading it")
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Hold("acme/one", "deleting it")
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "acme/one is in use by another Darkroom, which is downloading it: ") {
		t.Fatalf("second hold: %v", err)
	}
	if doing, held := b.Elsewhere("acme/one"); !held || doing != "downloading it" {
		t.Errorf("Elsewhere of a held model: %q, %v", doing, held)
	}
	for _, name := range []string{"acme/two", "never/held"} {
		if _, held := b.Elsewhere(name); held {
			t.Errorf("Elsewhere(%s): held", name)
		}
	}
	other, err := b.Hold("acme/two", "deleting it") // another model is free
	if err != nil {
		t.Fatal(err)
	}
	other()

	// HoldAll with one model held elsewhere takes none: acme/two stays free.
	if _, err := b.HoldAll("moving the models folder"); !errors.Is(err, ErrHeld) {
		t.Fatalf("HoldAll with a model held: %v", err)
	}
	r2, err := a.Hold("acme/two", "converting a model into it")
	if err != nil {
		t.Fatalf("HoldAll kept a hold after failing: %v", err)
	}
	r2()

	release()
	release() // twice is harmless
	if _, held := b.Elsewhere("acme/one"); held {
		t.Error("Elsewhere after release: held")
	}
	all, err := b.HoldAll("moving the models folder")
	if err != nil {
		t.Fatalf("HoldAll after release: %v", err)
	}
	if _, err := a.Hold("acme/two", "x"); !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "moving the models folder") {
		t.Errorf("a hold under HoldAll: %v", err)
	}
	all()
	if r, err := a.Hold("acme/one", "x"); err != nil {
		t.Errorf("after HoldAll's release: %v", err)
	} else {
		r()
	}
}
