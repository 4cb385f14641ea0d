// mcpsift HTML report: draws the calls table (filters, sort, paging) and one
// sequence diagram per scope from the JSON data embedded in the page. No
// dependencies and no network. It writes its own self-check into #selftest, which
// the browser test reads back.
(function () {
  "use strict";
  var errors = [];
  window.addEventListener("error", function (e) {
    errors.push(String(e.message) + (e.lineno ? " at line " + e.lineno : ""));
    selftest();
  });
  // Anything the page tried to load is a bug: the CSP blocks it, and we say so.
  document.addEventListener("securitypolicyviolation", function (e) {
    errors.push("blocked by the page's CSP: " + e.violatedDirective + " " + e.blockedURI);
    selftest();
  });
  var consoleError = console.error;
  console.error = function () {
    errors.push(Array.prototype.join.call(arguments, " "));
    consoleError.apply(console, arguments);
  };

  var D = JSON.parse(document.getElementById("mcpsift-data").textContent);
  var PAGE = 200; // table rows per page
  var PER_SCOPE = 300; // calls drawn per timeline
  var SUCCESS = "TOOL_SUCCESS";
  var SEV = { HIGH: 4, MEDIUM: 3, LOW: 2, INFO: 1 };
  var FILTERS = ["outcome", "tool", "scope", "finding", "input"];
  var state = { filter: {}, ok: false, sort: "n", desc: false, page: 0, matching: 0 };
  D.rows.forEach(function (r, n) { r.n0 = n; });
  var byKey = {};
  D.rows.forEach(function (r) { byKey[r.k] = r; });

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var a in attrs || {}) e.setAttribute(a, attrs[a]);
    if (text != null) e.textContent = text;
    return e;
  }
  var NS = "http://www.w3.org/2000/svg";
  function sv(parent, tag, attrs, text) {
    var e = document.createElementNS(NS, tag);
    for (var a in attrs || {}) e.setAttribute(a, attrs[a]);
    if (text != null) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function worst(r) {
    var w = null;
    r.f.forEach(function (f) { if (!w || SEV[f[1]] > SEV[w]) w = f[1]; });
    return w;
  }
  // Successes with nothing else to say are folded away unless asked for.
  function quiet(r) { return r.o === SUCCESS && r.f.length === 0 && r.n <= 1; }
  function matches(r) {
    var f = state.filter;
    if (f.outcome && r.o !== f.outcome) return false;
    if (f.tool && r.tool !== f.tool) return false;
    if (f.scope && r.scope !== f.scope) return false;
    if (f.input && String(r.i) !== f.input) return false;
    if (f.finding && !r.f.some(function (x) { return x[0] === f.finding; })) return false;
    if (!state.ok && !f.outcome && quiet(r)) return false;
    return true;
  }

  // ---- state in the URL hash: #filter=outcome:X,tool:Y&ok=1&sort=start&desc=1&page=2
  function readHash() {
    var h = decodeURIComponent(location.hash.replace(/^#/, ""));
    if (!/^(filter|ok|sort|desc|page)=/.test(h)) return false;
    state.filter = {}; state.ok = false; state.sort = "n"; state.desc = false; state.page = 0;
    h.split("&").forEach(function (part) {
      var eq = part.indexOf("="); if (eq < 0) return;
      var k = part.slice(0, eq), v = part.slice(eq + 1);
      if (k === "filter") {
        v.split(",").forEach(function (kv) {
          var c = kv.indexOf(":");
          if (c > 0 && FILTERS.indexOf(kv.slice(0, c)) >= 0) state.filter[kv.slice(0, c)] = kv.slice(c + 1);
        });
      } else if (k === "ok") state.ok = v === "1";
      else if (k === "sort") state.sort = v;
      else if (k === "desc") state.desc = v === "1";
      else if (k === "page") state.page = Math.max(0, parseInt(v, 10) || 0);
    });
    return true;
  }
  function writeHash() {
    var parts = [];
    var f = FILTERS.filter(function (k) { return state.filter[k]; })
      .map(function (k) { return k + ":" + state.filter[k]; });
    if (f.length) parts.push("filter=" + f.join(","));
    if (state.ok) parts.push("ok=1");
    if (state.sort !== "n") parts.push("sort=" + state.sort);
    if (state.desc) parts.push("desc=1");
    if (state.page) parts.push("page=" + state.page);
    history.replaceState(null, "", parts.length ? "#" + encodeURI(parts.join("&")) : location.pathname);
  }

  // ---- the calls table
  var SORT = {
    n: function (r) { return r.n0; },
    outcome: function (r) { return r.o; },
    tool: function (r) { return r.tool; },
    id: function (r) { return r.id; },
    http: function (r) { return r.http.join(","); },
    findings: function (r) { return SEV[worst(r)] || 0; },
    start: function (r) { return r.t == null ? -1 : r.t; },
    dur: function (r) { return r.t == null || r.te == null ? -1 : r.te - r.t; },
    scope: function (r) { return r.scope; },
    input: function (r) { return r.i; },
    loc: function (r) { return r.n0; }
  };
  function controls() {
    var box = document.getElementById("controls");
    var values = {
      outcome: {}, tool: {}, scope: {}, finding: {}, input: {}
    };
    D.rows.forEach(function (r) {
      values.outcome[r.o] = r.o; values.tool[r.tool] = r.tool; values.scope[r.scope] = r.scope;
      values.input[r.i] = D.inputs[r.i];
      r.f.forEach(function (f) { values.finding[f[0]] = f[0]; });
    });
    FILTERS.forEach(function (k) {
      var label = el("label", {}, k + " ");
      var s = el("select", { id: "filter-" + k });
      s.appendChild(el("option", { value: "" }, "all"));
      Object.keys(values[k]).sort().forEach(function (v) {
        s.appendChild(el("option", { value: v }, values[k][v]));
      });
      s.addEventListener("change", function () {
        if (s.value) state.filter[k] = s.value; else delete state.filter[k];
        state.page = 0; writeHash(); table();
      });
      label.appendChild(s); box.appendChild(label);
    });
    var ok = el("label", {}, " show successful calls");
    var cb = el("input", { type: "checkbox", id: "show-ok" });
    cb.addEventListener("change", function () { state.ok = cb.checked; state.page = 0; writeHash(); table(); });
    ok.insertBefore(cb, ok.firstChild); box.appendChild(ok);
    document.querySelectorAll("#calls-table th[data-col]").forEach(function (th) {
      th.addEventListener("click", function () {
        var c = th.getAttribute("data-col");
        state.desc = state.sort === c ? !state.desc : false;
        state.sort = c; writeHash(); table();
      });
    });
  }
  function syncControls() {
    FILTERS.forEach(function (k) {
      var s = document.getElementById("filter-" + k);
      if (s) s.value = state.filter[k] || "";
    });
    document.getElementById("show-ok").checked = state.ok;
    document.querySelectorAll("#calls-table th[data-col]").forEach(function (th) {
      var c = th.getAttribute("data-col");
      th.className = c === state.sort ? (state.desc ? "sorted desc" : "sorted") : "";
    });
  }
  function ms(v) { return v < 1000 ? v.toFixed(v < 10 ? 1 : 0) + " ms" : (v / 1000).toFixed(2) + " s"; }
  function table() {
    syncControls();
    var rows = D.rows.filter(matches);
    var key = SORT[state.sort] || SORT.n;
    rows.sort(function (a, b) {
      var x = key(a), y = key(b);
      var c = x < y ? -1 : x > y ? 1 : a.n0 - b.n0;
      return state.desc ? -c : c;
    });
    state.matching = rows.length;
    var pages = Math.max(1, Math.ceil(rows.length / PAGE));
    if (state.page >= pages) state.page = pages - 1;
    var body = document.getElementById("calls-body");
    body.textContent = "";
    rows.slice(state.page * PAGE, (state.page + 1) * PAGE).forEach(function (r) {
      var w = worst(r);
      var tr = el("tr", { "class": "row o-" + r.o + (w ? " s-" + w : ""), "data-key": r.k });
      var first = el("td");
      if (r.d) first.appendChild(el("a", { href: "#" + r.k }, "#" + (r.n0 + 1)));
      else first.appendChild(el("span", { title: "detail not written (size cap)" }, "#" + (r.n0 + 1)));
      tr.appendChild(first);
      var o = el("td"); o.appendChild(el("span", { "class": "badge o-" + r.o }, r.o)); tr.appendChild(o);
      tr.appendChild(el("td", {}, r.tool));
      tr.appendChild(el("td", {}, r.id));
      tr.appendChild(el("td", { title: r.ct || "" }, r.http.join(", ") || "—"));
      var f = el("td");
      r.f.forEach(function (x) { f.appendChild(el("span", { "class": "sev s-" + x[1] }, x[0])); f.appendChild(document.createTextNode(" ")); });
      if (r.n > 1) f.appendChild(el("span", { "class": "attempt" }, "attempt " + r.n + " (" + r.og + ")"));
      tr.appendChild(f);
      tr.appendChild(el("td", { title: r.at || "" }, r.at ? r.at.slice(11, 23) : "—"));
      tr.appendChild(el("td", {}, r.t != null && r.te != null ? ms(r.te - r.t) : "—"));
      tr.appendChild(el("td", {}, r.scope));
      tr.appendChild(el("td", { title: D.inputs[r.i] }, D.inputs[r.i].split("/").pop()));
      tr.appendChild(el("td", {}, r.loc));
      body.appendChild(tr);
    });
    var hidden = D.rows.filter(function (r) { return !state.ok && quiet(r); }).length;
    if (!rows.length) {
      var tr = el("tr"); tr.appendChild(el("td", { colspan: "11" }, "No call matches." + (hidden ? " " + hidden + " successful calls are folded away: tick \u201cshow successful calls\u201d." : "")));
      body.appendChild(tr);
    }
    var pager = document.getElementById("pager");
    pager.textContent = "";
    var from = rows.length ? state.page * PAGE + 1 : 0, to = Math.min(rows.length, (state.page + 1) * PAGE);
    pager.appendChild(el("span", {}, "calls " + from + "\u2013" + to + " of " + rows.length +
      (hidden && !state.filter.outcome ? " (" + hidden + " successful calls folded away)" : "")));
    [["\u2190 previous", -1], ["next \u2192", 1]].forEach(function (b) {
      var btn = el("button", { type: "button" }, b[0]);
      var to = state.page + b[1];
      btn.disabled = to < 0 || to >= pages;
      btn.addEventListener("click", function () { state.page = to; writeHash(); table(); });
      pager.appendChild(btn);
    });
    selftest();
  }

  // ---- timelines: client lane and server lane, time running down
  var CX = 200, SX = 560, W = 960, TOP = 40, MIN_GAP = 16, IDLE_PX = 36;
  var END_WORDS = {
    closed: "stream cut: the server closed it",
    client_closed: "stream cut: the client closed it",
    reset: "stream cut: TCP reset",
    capture_ended: "the capture ended before the response",
    truncated: "the recorder truncated the response"
  };
  var NO_RESPONSE_WORDS = {
    closed: "the server closed the connection",
    client_closed: "the client closed the connection",
    reset: "TCP reset",
    capture_ended: "the capture ended first",
    truncated: "the recorder cut it"
  };
  function colour(r) {
    var w = worst(r);
    if (w) return "var(--s-" + w + ")";
    return r.o === SUCCESS ? "var(--ok)" : r.o === "INPUT_REQUIRED" ? "var(--info)" : "var(--bad)";
  }
  // Every moment a call shows on the diagram.
  function moments(r, k) {
    var tl = r.tl, m = { req: r.t, end: r.te };
    if (!D.timed) { m.req = k * 10; m.end = k * 10 + 5; }
    if (tl && D.timed) {
      if (tl.rq != null) m.req = tl.rq;
      m.resp = tl.rs;
      m.ev = tl.ev.map(function (e) { return e[0]; });
      m.cut = tl.et != null ? tl.et : r.te;
      tl.res.forEach(function (l) {
        [l.rq, l.rs, l.et].forEach(function (t) { if (t != null) m.ev.push(t); });
        l.ev.forEach(function (e) { if (e[0] != null) m.ev.push(e[0]); });
      });
    }
    if (m.req == null) m.req = m.end != null ? m.end : 0;
    return m;
  }
  // Resumption legs: each GET with Last-Event-ID, its stream and what it carried.
  function legs(svg, r, Y, c, arrow) {
    var g = sv(svg, "g", { "class": "resume", style: "color:" + c });
    r.tl.res.forEach(function (l, n) {
      if (l.rq == null) return;
      var yq = Y[l.rq];
      sv(g, "line", { x1: CX, y1: yq, x2: SX, y2: yq, "class": "msg dashed", "marker-end": arrow });
      sv(g, "text", { x: CX + 6, y: yq - 4, "class": "msg-label" }, "GET with Last-Event-ID (resumption " + (n + 1) + " of id " + r.id + ")");
      sv(g, "text", { x: SX + 10, y: yq + 4, "class": "resume-label" }, "resumed");
      if (l.rs == null) return;
      var yr = Y[l.rs];
      sv(g, "line", { x1: SX, y1: yr, x2: CX, y2: yr, "class": "msg resp", "marker-end": arrow });
      sv(g, "text", { x: CX + 6, y: yr - 4, "class": "msg-label" }, "HTTP " + l.status);
      var evs = l.ev.filter(function (e) { return e[0] != null; });
      var x = SX - 14, yEnd = l.et != null ? Y[l.et] : evs.length ? Y[evs[evs.length - 1][0]] : yr;
      sv(g, "line", { x1: x, y1: yr, x2: x, y2: Math.max(yr, yEnd), "class": "stream" });
      evs.forEach(function (e) {
        var ye = Y[e[0]];
        sv(g, "line", { x1: x - 6, y1: ye, x2: x + 6, y2: ye, "class": "tick " + e[1] });
        if (e[1] === "final") {
          sv(g, "line", { x1: x, y1: ye, x2: CX, y2: ye, "class": "msg final", "marker-end": arrow });
          sv(g, "text", { x: CX + 6, y: ye - 4, "class": "msg-label" }, "final response for id " + r.id + " on the resumed stream");
        }
      });
    });
  }
  // The answer came on a later stream: the GET that resumed it, then the answer.
  function resumed(svg, r, y, c, arrow) {
    if (r.via !== "resumption") {
      sv(svg, "line", { x1: SX, y1: y, x2: CX, y2: y, "class": "msg final", "marker-end": arrow, style: "color:" + c });
      sv(svg, "text", { x: CX + 6, y: y - 4, "class": "msg-label" }, "response on the session's SSE stream (legacy HTTP+SSE GET)");
      return;
    }
    var yg = y - MIN_GAP / 2;
    var g = sv(svg, "g", { "class": "resume", style: "color:" + c });
    sv(g, "line", { x1: CX, y1: yg, x2: SX, y2: yg, "class": "msg dashed", "marker-end": arrow });
    sv(g, "text", { x: SX + 10, y: yg + 4, "class": "resume-label" }, "resumed: GET with Last-Event-ID (stream " + (r.leg + 1) + ")");
    sv(g, "line", { x1: SX, y1: y, x2: CX, y2: y, "class": "msg final", "marker-end": arrow });
    sv(g, "text", { x: CX + 6, y: y - 4, "class": "msg-label" }, "final response on the resumed stream \u00b7 HTTP " + r.http.join(", "));
  }
  function timeline(box) {
    var input = +box.getAttribute("data-input"), scope = +box.getAttribute("data-scope");
    var rows = D.rows.filter(function (r) { return r.i === input && r.sc === scope; });
    var all = rows.length;
    rows = rows.slice(0, PER_SCOPE);
    var ms_ = rows.map(moments);
    var times = [];
    ms_.forEach(function (m) {
      [m.req, m.resp, m.end, m.cut].concat(m.ev || []).forEach(function (t) { if (t != null) times.push(t); });
    });
    times.sort(function (a, b) { return a - b; });
    var uniq = times.filter(function (t, n) { return n === 0 || t !== times[n - 1]; });
    var active = 0;
    for (var n = 1; n < uniq.length; n++) active += Math.min(uniq[n] - uniq[n - 1], 1000);
    var base = Math.min(2, Math.max(0.002, 420 / Math.max(active, 1)));
    var ctl = el("div", { "class": "zoom" });
    var range = el("input", { type: "range", min: "-4", max: "8", step: "1", value: "0", "aria-label": "zoom" });
    var out = el("span", {}, "");
    ctl.appendChild(el("span", {}, D.timed ? "zoom " : "no times recorded: calls in input order "));
    ctl.appendChild(range); ctl.appendChild(out);
    if (all > rows.length) ctl.appendChild(el("span", { "class": "note" }, " first " + rows.length + " of " + all + " calls drawn"));
    box.appendChild(ctl);
    var holder = el("div", { "class": "svg-holder" });
    box.appendChild(holder);
    function draw() {
      var px = base * Math.pow(2, +range.value);
      out.textContent = D.timed ? " " + (px >= 1 ? px.toFixed(1) + " px/ms" : (1 / px).toFixed(1) + " ms/px") : "";
      holder.textContent = "";
      // Time to y: linear, idle gaps folded to a fixed height, marks kept apart.
      var Y = {}, gaps = [], y = TOP, prev = null;
      uniq.forEach(function (t) {
        if (prev !== null) {
          var d = (t - prev) * px;
          if (D.timed && d > 90 && t - prev > 1000) { gaps.push([y, y + IDLE_PX, t - prev]); y += IDLE_PX; }
          else y += Math.max(d, MIN_GAP);
        }
        Y[t] = y; prev = t;
      });
      var H = y + 60;
      var svg = sv(holder, "svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, "class": "seq" });
      var defs = sv(svg, "defs");
      var mk = sv(defs, "marker", { id: "arr-" + input + "-" + scope, viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" });
      sv(mk, "path", { d: "M0,0 L10,5 L0,10 z", fill: "context-stroke" });
      var arrow = "url(#arr-" + input + "-" + scope + ")";
      sv(svg, "text", { x: CX, y: 16, "class": "lane-label" }, "client");
      sv(svg, "text", { x: SX, y: 16, "class": "lane-label" }, "server");
      sv(svg, "line", { x1: CX, y1: 24, x2: CX, y2: H - 10, "class": "lane" });
      sv(svg, "line", { x1: SX, y1: 24, x2: SX, y2: H - 10, "class": "lane" });
      gaps.forEach(function (g) {
        sv(svg, "rect", { x: 60, y: g[0] + 6, width: W - 70, height: g[1] - g[0] - 12, "class": "idle" });
        sv(svg, "text", { x: (CX + SX) / 2, y: (g[0] + g[1]) / 2 + 4, "class": "idle-label" }, "\u22ef " + ms(g[2]) + " idle \u22ef");
      });
      var t0 = uniq.length ? uniq[0] : 0, lastLabel = -100;
      uniq.forEach(function (t) {
        if (Y[t] - lastLabel < 14) return;
        lastLabel = Y[t];
        sv(svg, "text", { x: 4, y: Y[t] + 4, "class": "axis" }, D.timed ? "+" + ms(t - t0) : "");
      });
      var col = 0, where = {};
      rows.forEach(function (r, k) {
        var m = ms_[k], c = colour(r), tl = r.tl;
        var g = sv(svg, "g", { "class": "call", "data-key": r.k, style: "color:" + c });
        var link = r.d ? sv(g, "a", { href: "#" + r.k }) : g;
        var yq = Y[m.req];
        where[r.k] = yq;
        var req = tl ? tl.req.replace(/^(\w+) https?:\/\/[^\/]+/, "$1 ") : "tools/call";
        sv(link, "line", { x1: CX, y1: yq, x2: SX, y2: yq, "class": "msg", "marker-end": arrow });
        sv(link, "text", { x: CX + 6, y: yq - 4, "class": "msg-label" }, req + " \u00b7 id " + r.id + " " + r.tool);
        sv(link, "text", { x: SX + 10, y: yq + 4, "class": "outcome" },
          r.o + (r.f.length ? " \u00b7 " + r.f.map(function (f) { return f[0]; }).join(", ") : ""));
        if (tl && D.timed) {
          var yr = tl.rs != null ? Y[tl.rs] : null;
          if (tl.status != null && yr != null) {
            sv(svg, "line", { x1: SX, y1: yr, x2: CX, y2: yr, "class": "msg resp", "marker-end": arrow, style: "color:" + c });
            sv(svg, "text", { x: CX + 6, y: yr - 4, "class": "msg-label" }, "HTTP " + tl.status + (tl.ct ? " \u00b7 " + tl.ct : ""));
          }
          var evs = tl.ev.filter(function (e) { return e[0] != null; });
          if (yr != null && (evs.length || /event-stream/.test(tl.ct || ""))) {
            var x = SX - 14 - 8 * (col++ % 6);
            var yEnd = m.cut != null ? Y[m.cut] : evs.length ? Y[evs[evs.length - 1][0]] : yr;
            sv(svg, "line", { x1: x, y1: yr, x2: x, y2: Math.max(yEnd, yr), "class": "stream", style: "color:" + c });
            evs.forEach(function (e) {
              var ye = Y[e[0]];
              sv(svg, "line", { x1: x - 6, y1: ye, x2: x + 6, y2: ye, "class": "tick " + e[1], style: "color:" + c }).appendChild(
                sv(null, "title", {}, e[2]));
              if (e[1] === "final") {
                sv(svg, "line", { x1: x, y1: ye, x2: CX, y2: ye, "class": "msg final", "marker-end": arrow, style: "color:" + c });
                sv(svg, "text", { x: CX + 6, y: ye - 4, "class": "msg-label" }, "final response: " + e[2]);
              }
            });
            if (tl.more) sv(svg, "text", { x: x + 8, y: yEnd - 2, "class": "note" }, "+" + tl.more + " events");
          }
          if (tl.res.length) legs(svg, r, Y, c, arrow);
          else if (r.leg && m.end != null) resumed(svg, r, Y[m.end], c, arrow);
        } else if (!r.cut && m.end != null && r.o !== "NO_RESPONSE") {
          var ye2 = Y[m.end];
          if (r.leg) resumed(svg, r, ye2, c, arrow);
          else {
            sv(svg, "line", { x1: SX, y1: ye2, x2: CX, y2: ye2, "class": "msg resp", "marker-end": arrow, style: "color:" + c });
            sv(svg, "text", { x: CX + 6, y: ye2 - 4, "class": "msg-label" },
              (r.http.length ? "HTTP " + r.http.join(", ") : "response") + (r.ct ? " \u00b7 " + r.ct : ""));
          }
        }
        // A stream cut and then resumed is drawn cut too: that is the story.
        var legCut = !r.cut && tl && tl.res.length && tl.end !== "complete";
        if (r.cut || legCut || r.o === "NO_RESPONSE") {
          // Never on the request's own line, where the outcome is written.
          var yc = Math.max(Y[m.cut != null ? m.cut : m.end != null ? m.end : m.req], yq + MIN_GAP);
          var end = legCut ? tl.end : r.end;
          var xc = end === "client_closed" ? CX : end === "closed" || end === "reset" ? SX : (CX + SX) / 2;
          var cg = sv(svg, "g", { "class": r.cut ? "cut" : legCut ? "cut leg" : "lost", style: "color:" + c });
          sv(cg, "path", { d: "M" + (xc - 6) + "," + (yc - 6) + " l12,12 m0,-12 l-12,12", "class": "cross" });
          sv(cg, "text", { x: SX + 10, y: yc + 4, "class": "cut-label" },
            legCut ? (END_WORDS[tl.end] || tl.end) + ", then resumed"
              : !r.cut ? "no response recorded"
              : r.o === "NO_RESPONSE" ? "no response: " + (NO_RESPONSE_WORDS[r.end] || r.end)
              : (END_WORDS[r.end] || r.end));
        }
        if (r.o === "INPUT_REQUIRED") {
          var yi = Y[m.end != null ? m.end : m.req];
          sv(svg, "text", { x: SX + 10, y: yi + 16, "class": "note" }, "input_required: the client must answer in a follow-up");
        }
      });
      // Repeats and MRTR rounds, joined to the attempt they repeat.
      rows.forEach(function (r) {
        if (!r.prev) return;
        var c = colour(r), y1 = where[r.k], y0 = where[r.prev];
        var cls = "repeat-link" + (r.og === "mrtr" ? " mrtr" : "");
        var words = r.og === "mrtr" ? "MRTR round " + r.n : "attempt " + r.n + " (" + r.og.replace(/_/g, " ") + ")";
        if (y0 != null) {
          var bend = Math.min(110, 30 + (y1 - y0) / 4);
          var g = sv(svg, "g", { "class": cls, style: "color:" + c });
          sv(g, "path", { d: "M" + (CX - 4) + "," + y0 + " C" + (CX - bend) + "," + y0 + " " + (CX - bend) + "," + y1 + " " + (CX - 4) + "," + y1, "marker-end": arrow });
          sv(g, "text", { x: CX - bend / 2 - 8, y: (y0 + y1) / 2 + 4, "class": "link-label" }, words);
        } else {
          var p = byKey[r.prev];
          var a = sv(svg, "a", { href: "#" + r.prev, "class": cls + " xscope", style: "color:" + c });
          sv(a, "text", { x: CX - 8, y: y1 + 14, "class": "link-label" },
            "\u21a9 " + words + " of id " + (p ? p.id + " in " + p.scope : "an earlier call"));
        }
      });
    }
    range.addEventListener("input", function () { draw(); selftest(); });
    draw();
  }

  // ---- navigation: a call's anchor opens every section around it
  function reveal() {
    var id = decodeURIComponent(location.hash.slice(1));
    if (!id || /=/.test(id)) return;
    var e = document.getElementById(id);
    if (!e) return;
    for (var p = e; p; p = p.parentElement) if (p.tagName === "DETAILS") p.open = true;
    e.scrollIntoView();
  }

  function selftest() {
    var st = document.getElementById("selftest");
    if (!st) return;
    var q = function (s) { return document.querySelectorAll(s).length; };
    st.textContent = JSON.stringify({
      calls: D.rows.length,
      calls_total: D.calls_total,
      matching: state.matching,
      rendered: q("#calls-body tr.row"),
      findings: q("table.findings tr.finding"),
      details: q("details.call"),
      timelines: q("svg.seq"),
      cuts: q("svg .cut:not(.leg)"),
      leg_cuts: q("svg .cut.leg"),
      links: q("svg .repeat-link"),
      mrtr_links: q("svg .repeat-link.mrtr"),
      resumes: q("svg .resume"),
      errors: errors
    });
  }

  try {
    readHash();
    controls();
    table();
    document.querySelectorAll("div.timeline").forEach(timeline);
    window.addEventListener("hashchange", function () {
      if (readHash()) {
        table();
        document.getElementById("calls").scrollIntoView();
      } else reveal();
    });
    reveal();
  } catch (e) {
    errors.push(String(e && e.stack || e));
  }
  selftest();
})();
