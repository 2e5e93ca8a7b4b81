// locktag ops page: lease countdowns, periodic refresh, force-release.
// No dependencies; served from this handler only (see the page's CSP).
(function () {
  "use strict";
  var refreshMs = parseInt(document.body.dataset.refreshMs, 10) || 5000;
  var readAt = performance.now(); // when the rows' lease values were read

  function fmt(ms) {
    if (ms <= 0) { return "expired"; }
    return (ms / 1000).toFixed(1) + "s";
  }

  // tick moves every lease countdown down from the value Redis reported.
  function tick() {
    var gone = performance.now() - readAt;
    document.querySelectorAll(".lease[data-left-ms]").forEach(function (el) {
      var left = parseInt(el.dataset.leftMs, 10) - gone;
      el.textContent = fmt(left);
      el.classList.toggle("expired", left <= 0);
    });
  }

  // editing: an operator is typing a reason; a refresh would wipe it.
  function editing() {
    var inputs = document.querySelectorAll("form.release input.reason");
    for (var i = 0; i < inputs.length; i++) {
      if (inputs[i].value !== "" || inputs[i] === document.activeElement) { return true; }
    }
    return false;
  }

  var state = document.getElementById("refresh-state");
  var label = state ? state.textContent : "";

  // refresh re-reads this page and swaps in its rows.
  function refresh(force) {
    if (!force && editing()) {
      if (state) { state.textContent = "refresh paused while you type a reason"; }
      return Promise.resolve();
    }
    return fetch(location.href, { headers: { "Accept": "text/html" }, credentials: "same-origin" })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        // The operator may have started typing while this was on its way:
        // swapping the rows now would wipe the reason.
        if (!force && editing()) {
          if (state) { state.textContent = "refresh paused while you type a reason"; }
          return;
        }
        var doc = new DOMParser().parseFromString(html, "text/html");
        var rows = doc.getElementById("rows");
        if (!rows) { return; }
        document.getElementById("rows").replaceWith(rows);
        readAt = performance.now();
        if (state) { state.textContent = label; }
        tick();
      })
      .catch(function () {
        if (state) { state.textContent = "refresh failed; retrying"; }
      });
  }

  function say(msg, ok) {
    var s = document.getElementById("status");
    s.textContent = msg;
    s.className = ok ? "ok" : "err";
  }

  // Force-release: a JSON POST with the X-Locktag-Ops header (the CSRF
  // guard: other sites cannot send it without a preflight).
  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    if (!form.classList || !form.classList.contains("release")) { return; }
    ev.preventDefault();
    var reason = form.elements.reason.value.trim();
    if (reason === "") {
      say("Give a reason: it is logged with your name.", false);
      form.elements.reason.focus();
      return;
    }
    var button = form.querySelector("button");
    button.disabled = true;
    fetch("api/release", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-Locktag-Ops": "1" },
      body: JSON.stringify({ handle: form.dataset.handle, reason: reason })
    }).then(function (r) {
      return r.json().then(function (body) { return { status: r.status, body: body }; });
    }).then(function (res) {
      if (res.status === 200) {
        say("Released " + res.body.name + ".", true);
      } else {
        say("Not released (" + res.status + "): " + (res.body.error || "error"), false);
      }
      form.elements.reason.value = "";
      document.activeElement.blur();
      return refresh(true);
    }).catch(function (e) {
      say("Not released: " + e, false);
      button.disabled = false;
    });
  });

  setInterval(tick, 100);
  setInterval(function () { refresh(false); }, refreshMs);
  tick();
})();
