// develop.js: Darkroom's only script. It follows the event stream of a page that
// is being written and swaps in each draft, and offers the entries whose titles
// begin with the topic being typed in the search box (GET /suggest). The HTML it receives was sanitized by
// the server (no scripts, handlers or remote URLs); the page's CSP forbids
// anything but this origin anyway.
(function () {
  "use strict";
  var page = document.getElementById("page");
  var status = document.getElementById("status");
  var url = page && page.getAttribute("data-events");
  if (!url) return;
  if (!window.EventSource) { // cannot follow the page as it develops: wait for the whole page
    var whole = page.getAttribute("data-whole");
    status.textContent = "This browser cannot follow the page as it develops; showing it when it is finished…";
    if (whole) window.location.replace(whole);
    return;
  }
  var es = new EventSource(url);
  function show(e) {
    var d = JSON.parse(e.data);
    if (typeof d.html === "string") page.innerHTML = d.html;
    status.textContent = d.status || "";
  }
  function end() {
    es.close();
    page.removeAttribute("aria-busy");
  }
  es.addEventListener("draft", show);
  es.addEventListener("done", function (e) { show(e); end(); });
  es.addEventListener("failed", function (e) {
    status.textContent = JSON.parse(e.data).status || "Stopped.";
    end();
  });
  // A dropped stream would otherwise reconnect and start the page again.
  es.onerror = function () {
    if (es.readyState !== EventSource.CLOSED) status.textContent = "Lost the connection to Darkroom.";
    end();
  };
})();

(function () {
  "use strict";
  var input = document.querySelector && document.querySelector('header input[name="q"]');
  var list = document.getElementById("topics");
  if (!input || !list || !window.fetch) return;
  var asked = "";
  input.addEventListener("input", function () {
    var q = input.value.trim();
    if (q === asked) return;
    asked = q;
    if (!q) { list.textContent = ""; return; }
    window.fetch("/suggest?q=" + encodeURIComponent(q), { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : []; })
      .then(function (titles) {
        if (q !== asked) return; // typed on since
        list.textContent = "";
        titles.forEach(function (t) {
          var o = document.createElement("option");
          o.value = t;
          list.appendChild(o);
        });
      })
      .catch(function () {});
  });
})();
