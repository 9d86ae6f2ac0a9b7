package settings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRemoteServers: added servers and the active remote model survive a
// restart; an empty or repeated address is dropped, the active model goes with
// its server, the file is the user's own, and a caller's copy is its own.
func TestRemoteServers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	s, _ := Open(path)
	if err := s.Update(func(v *Values) {
		v.RemoteServers = []RemoteServer{{URL: "http://gpu:8000/v1", Key: "sk-1"}, {URL: ""}, {URL: "http://gpu:8000/v1", Key: "sk-2"},
			{URL: "http://other:8080"}}
		v.RemoteModel = &RemoteModel{URL: "http://gpu:8000/v1", ID: "google/diffusiongemma", OwnedBy: "vllm"}
	}); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	got := s2.Get()
	if len(got.RemoteServers) != 2 || got.RemoteServers[0].Key != "sk-1" || got.RemoteModel == nil || got.RemoteModel.ID != "google/diffusiongemma" {
		t.Fatalf("reloaded %+v %+v", got.RemoteServers, got.RemoteModel)
	}
	if srv, ok := got.RemoteServer("http://other:8080"); !ok || srv.Key != "" {
		t.Errorf("lookup %+v %v", srv, ok)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("settings file mode %v (%v): the keys must be readable by this user only", fi.Mode(), err)
	}

	got.RemoteServers[0].Key = "changed"
	got.RemoteModel.ID = "changed"
	if again := s2.Get(); again.RemoteServers[0].Key != "sk-1" || again.RemoteModel.ID != "google/diffusiongemma" {
		t.Error("a copy from Get changed the store")
	}

	if err := s2.Update(func(v *Values) { v.RemoteServers = v.RemoteServers[1:] }); err != nil {
		t.Fatal(err)
	}
	if v := s2.Get(); v.RemoteModel != nil {
		t.Errorf("the active remote model outlived its server: %+v", v.RemoteModel)
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), "sk-1") {
		t.Error("a removed server's key is still in the file")
	}
}
