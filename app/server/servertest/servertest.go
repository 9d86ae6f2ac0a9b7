// Package servertest runs Darkroom's server (app/server) for other packages'
// tests: the real `darkroom serve` server on a loopback port, over whatever
// engine the test gives it (tinyengine's real one, or a wrapper of it).
package servertest

import (
	"context"
	"testing"

	"github.com/darkroomlabs/darkroom/app/server"
)

// Start creates the server for opts and starts it listening. A failure stops the
// test; the server is closed when the test ends, and an error closing it fails
// the test.
func Start(t testing.TB, opts server.Options) *server.Server {
	t.Helper()
	s, err := server.New(opts)
	if err != nil {
		t.Fatalf("servertest: %v", err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("servertest: start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("servertest: close: %v", err)
		}
	})
	return s
}
