package server

import (
	"context"
	"errors"
	"sync"
)

// Switch turns the server on and off for the desktop app: the Settings toggle
// (Set) and "Open in browser" (PageURL, which starts it when it is off). Each
// start takes fresh options from Options, so a restarted server listens where
// the settings say now (a new random port unless they name one) with a new
// token. Model switches need no restart: see Options.Model.
type Switch struct {
	Options func() (Options, error)

	mu  sync.Mutex
	srv *Server
}

// Set starts (on) or stops (off) the server. On returns the home URL with the
// token; off returns "".
func (w *Switch) Set(on bool) (url string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !on {
		return "", w.stopLocked()
	}
	if err := w.startLocked(); err != nil {
		return "", err
	}
	return w.srv.URL("/"), nil
}

// PageURL returns the browser URL of title's encyclopedia page, starting the
// server if it is off.
func (w *Switch) PageURL(title string) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.startLocked(); err != nil {
		return "", err
	}
	return w.srv.PageURL(title), nil
}

// Running returns the running server, or nil.
func (w *Switch) Running() *Server {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.srv
}

// Close stops the server if it runs (call it when the app quits).
func (w *Switch) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stopLocked()
}

func (w *Switch) startLocked() error {
	if w.srv != nil {
		return nil
	}
	if w.Options == nil {
		return errors.New("server: the switch has no options")
	}
	opts, err := w.Options()
	if err != nil {
		return err
	}
	srv, err := New(opts)
	if err != nil {
		return err
	}
	if err := srv.Start(context.Background()); err != nil {
		return err
	}
	w.srv = srv
	return nil
}

func (w *Switch) stopLocked() error {
	if w.srv == nil {
		return nil
	}
	err := w.srv.Close()
	w.srv = nil
	return err
}
