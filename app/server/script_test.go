package server

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// harness runs develop.js against a fake DOM, EventSource and fetch, then
// replays a draft, a done and a failed event, and a topic typed into the search
// box, printing what the page showed as JSON.
const harness = `
const fs = require("fs");
const src = fs.readFileSync(process.argv[2], "utf8");
function el() { return { attrs: {}, innerHTML: "", textContent: "",
  getAttribute(k) { return k in this.attrs ? this.attrs[k] : null; },
  removeAttribute(k) { delete this.attrs[k]; } }; }
function run(withEvents, noEventSource) {
  const page = el(), status = el();
  const input = { value: "", listeners: {}, addEventListener(n, fn) { this.listeners[n] = fn; } };
  const list = { children: [], appendChild(c) { this.children.push(c); } };
  Object.defineProperty(list, "textContent", { set(v) { this.children = []; } });
  const fetches = [];
  function fetch(url, opts) {
    fetches.push([url, opts.credentials]);
    const titles = url.endsWith("comp") ? ["compile", "compiler"] : [];
    return Promise.resolve({ ok: true, json() { return Promise.resolve(titles); } });
  }
  if (withEvents) { page.attrs["data-events"] = "/events/wiki/Unix"; page.attrs["data-whole"] = "/wiki/Unix?whole=1"; page.attrs["aria-busy"] = "true"; }
  const sources = [];
  class EventSource {
    constructor(url) { this.url = url; this.listeners = {}; this.readyState = 1; sources.push(this); }
    addEventListener(name, fn) { this.listeners[name] = fn; }
    close() { this.closed = true; this.readyState = 2; }
    emit(name, data) { this.listeners[name]({ data: JSON.stringify(data) }); }
  }
  EventSource.CLOSED = 2;
  const document = { getElementById(id) { return id === "page" ? page : id === "status" ? status : id === "topics" ? list : null; },
    querySelector(sel) { return sel === 'header input[name="q"]' ? input : null; },
    createElement(tag) { return { tag, value: "" }; } };
  const location = { replace(u) { this.to = u; } };
  const win = noEventSource ? { location, fetch } : { EventSource, location, fetch };
  new Function("window", "document", "EventSource", src)(win, document, noEventSource ? undefined : EventSource);
  return { page, status, sources, location, input, list, fetches };
}
const out = {};
let r = run(true);
out.url = r.sources[0].url;
r.sources[0].emit("draft", { html: "<h1>Un</h1>", status: "step 1" });
out.draft = [r.page.innerHTML, r.status.textContent, !!r.sources[0].closed];
r.sources[0].emit("done", { html: "<h1>Unix</h1>", status: "Done" });
out.done = [r.page.innerHTML, r.status.textContent, !!r.sources[0].closed, r.page.getAttribute("aria-busy")];
r = run(true);
r.sources[0].emit("failed", { status: "Stopped: another page was requested." });
out.failed = [r.status.textContent, !!r.sources[0].closed];
r = run(true);
r.sources[0].onerror();
out.error = [!!r.sources[0].closed, r.status.textContent];
r = run(false);
out.cached = r.sources.length;
r = run(true, true);
out.noEventSource = [r.location.to || "", r.sources.length];
r = run(false);
r.input.value = " comp"; r.input.listeners.input(); // typed; then typed on past any title
setImmediate(() => {
  out.suggest = [r.fetches.map(f => f.join(" ")).join(","), r.list.children.map(o => o.tag + ":" + o.value).join(",")];
  r.input.value = "comp/x"; r.input.listeners.input();
  r.input.listeners.input(); // the same again: not asked twice
  setImmediate(() => {
    out.suggestNone = [r.fetches.map(f => f[0]).join(","), r.list.children.length];
    console.log(JSON.stringify(out));
  });
});
`

func TestDevelopJS(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: develop.js is not exercised")
	}
	dir := t.TempDir()
	js, err := staticFS.ReadFile("static/develop.js")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "develop.js"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "harness.js"), []byte(harness), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := exec.Command(node, filepath.Join(dir, "harness.js"), filepath.Join(dir, "develop.js")).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, b)
	}
	var out struct {
		URL    string `json:"url"`
		Draft  []any  `json:"draft"`
		Done   []any  `json:"done"`
		Failed []any  `json:"failed"`
		Error  []any  `json:"error"`
		Cached int    `json:"cached"`
		NoES   []any  `json:"noEventSource"`
		Sug    []any  `json:"suggest"`
		SugNo  []any  `json:"suggestNone"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("harness output %q: %v", b, err)
	}
	check := func(what string, got []any, want ...any) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: %v, want %v", what, got, want)
			return
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: %v, want %v", what, got, want)
				return
			}
		}
	}
	if out.URL != "/events/wiki/Unix" {
		t.Errorf("stream URL %q", out.URL)
	}
	check("draft", out.Draft, "<h1>Un</h1>", "step 1", false)
	check("done", out.Done, "<h1>Unix</h1>", "Done", true, nil)
	check("failed", out.Failed, "Stopped: another page was requested.", true)
	check("error", out.Error, true, "Lost the connection to Darkroom.")
	// A browser without EventSource goes to the finished page's address.
	check("no EventSource", out.NoES, "/wiki/Unix?whole=1", 0.0)
	// A topic typed is asked of GET /suggest and its titles offered, in a
	// datalist of options; typing on past them empties it.
	check("suggest", out.Sug, "/suggest?q=comp same-origin", "option:compile,option:compiler")
	check("suggest none", out.SugNo, "/suggest?q=comp,/suggest?q=comp%2Fx", 0.0)
	if out.Cached != 0 {
		t.Error("a cached page (no data-events) opened a stream")
	}
}
