// develop.js: Darkroom's only script. It follows the event stream of a page that
// is being written and swaps in each draft. The HTML it receives was sanitized by
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
