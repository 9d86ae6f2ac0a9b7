package servertest

import (
	"net/http"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/app/server"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/enginetest/tinyengine"
)

// TestStart: the server answers its API with its token while the test runs, and
// is closed, its port no longer answering, once the test ends.
func TestStart(t *testing.T) {
	e := tinyengine.Load(t, enginetest.Options{})
	models := func(s *server.Server) (*http.Response, error) {
		req, err := http.NewRequest("GET", "http://"+s.Addr()+"/v1/models", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+s.Token())
		return (&http.Client{Timeout: 5 * time.Second}).Do(req)
	}
	var s *server.Server
	t.Run("start", func(t *testing.T) {
		s = Start(t, server.Options{Engine: e, ModelID: "tiny"})
		resp, err := models(s)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /v1/models: %s", resp.Status)
		}
	})
	if resp, err := models(s); err == nil {
		resp.Body.Close()
		t.Errorf("after the test the server still answers: %s", resp.Status)
	}
}
