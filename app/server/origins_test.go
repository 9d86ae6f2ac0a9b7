package server

import (
	"strings"
	"testing"
)

func TestParseOrigins(t *testing.T) {
	got, err := ParseOrigins(" http://localhost:3000/, HTTPS://Demo.Example\nhttp://127.0.0.1:5173 http://localhost:3000")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"http://localhost:3000", "https://demo.example", "http://127.0.0.1:5173"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, err := ParseOrigins("  "); err != nil || len(got) != 0 {
		t.Errorf("empty: %q, %v", got, err)
	}
	for _, bad := range []string{"localhost:3000", "ftp://x.example", "http://x.example/app", "http://x.example?a=1",
		"*", "http://*.example", "http://user@x.example", "null", "file:///tmp"} {
		if _, err := ParseOrigins(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestAllowedOrigins: a web page whose origin the user allowed may call the API
// from a browser — its CORS preflight is answered (no token: browsers send none
// with it), its requests name it in Access-Control-Allow-Origin, errors included,
// so the page can read them — but still only with the token, and only the API:
// browser mode's pages stay this server's. Any other origin is refused, with the
// setting that would allow it named; the list changes while the server runs.
func TestAllowedOrigins(t *testing.T) {
	const page = "http://localhost:3000"
	s := start(t, Options{Engine: &fakeGen{final: "Unix is an operating system."}, Origins: []string{page + "/"}})
	auth := "Bearer " + s.Token()
	cors := func(hdr map[string]string) map[string]string {
		hdr["Origin"], hdr["Sec-Fetch-Site"], hdr["Sec-Fetch-Mode"] = page, "cross-site", "cors"
		return hdr
	}

	resp, _ := do(t, nil, "OPTIONS", base(s)+"/v1/chat/completions", "", cors(map[string]string{
		"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type,x-stainless-os"}))
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != page ||
		resp.Header.Get("Access-Control-Allow-Headers") != "authorization,content-type,x-stainless-os" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") ||
		resp.Header.Get("Access-Control-Allow-Private-Network") != "" {
		t.Errorf("preflight: %d, headers %v", resp.StatusCode, resp.Header)
	}
	// Chrome asks before a page on a public site reaches this computer.
	resp, _ = do(t, nil, "OPTIONS", base(s)+"/v1/models", "", cors(map[string]string{
		"Access-Control-Request-Method": "GET", "Access-Control-Request-Private-Network": "true"}))
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Private-Network") != "true" {
		t.Errorf("private-network preflight: %d, headers %v", resp.StatusCode, resp.Header)
	}

	resp, body := do(t, nil, "POST", base(s)+"/v1/chat/completions", `{"messages":[{"role":"user","content":"What is Unix?"}]}`,
		cors(map[string]string{"Authorization": auth, "Content-Type": "application/json"}))
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != page || !strings.Contains(body, "operating system") {
		t.Errorf("chat from the allowed page: %d %q, ACAO %q", resp.StatusCode, body, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	resp, _ = do(t, nil, "GET", base(s)+"/v1/models", "", cors(map[string]string{}))
	if resp.StatusCode != 401 || resp.Header.Get("Access-Control-Allow-Origin") != page {
		t.Errorf("the allowed page without the token: %d, ACAO %q; want 401 it can read", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	resp, _ = do(t, nil, "GET", base(s)+"/", "", cors(map[string]string{"Authorization": auth}))
	if resp.StatusCode != 403 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("browser mode from the allowed page: %d, ACAO %q; want refused", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}

	other := map[string]string{"Origin": "http://localhost:8080", "Authorization": auth}
	resp, body = do(t, nil, "GET", base(s)+"/v1/models", "", other)
	if resp.StatusCode != 403 || resp.Header.Get("Access-Control-Allow-Origin") != "" || !strings.Contains(body, "--allow-origin http://localhost:8080") {
		t.Errorf("another page: %d %q", resp.StatusCode, body)
	}
	resp, _ = do(t, nil, "OPTIONS", base(s)+"/v1/models", "", map[string]string{"Origin": "http://localhost:8080", "Access-Control-Request-Method": "GET"})
	if resp.StatusCode != 403 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("another page's preflight: %d", resp.StatusCode)
	}

	if err := s.SetOrigins([]string{"http://localhost:8080"}); err != nil {
		t.Fatal(err)
	}
	if resp, _ := do(t, nil, "GET", base(s)+"/v1/models", "", other); resp.StatusCode != 200 {
		t.Errorf("after SetOrigins, the page added: %d", resp.StatusCode)
	}
	if resp, _ := do(t, nil, "GET", base(s)+"/v1/models", "", cors(map[string]string{"Authorization": auth})); resp.StatusCode != 403 {
		t.Errorf("after SetOrigins, the page removed: %d", resp.StatusCode)
	}
	if err := s.SetOrigins([]string{"*"}); err == nil {
		t.Error("SetOrigins took a wildcard")
	}
	if _, err := New(Options{Engine: &fakeGen{}, Origins: []string{"localhost:3000"}}); err == nil {
		t.Error("New took an origin without a scheme")
	}
}
