/* crossview HTML report: draws the flamegraphs, the busy timeline and the roofline from the
   JSON inlined in the page. Plain JS, no dependencies, no network. Numbers come from the page
   data; this script only lays them out. */
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var css = getComputedStyle(document.documentElement);
  function cssVar(name, dflt) { var v = css.getPropertyValue(name).trim(); return v || dflt; }
  function data(el) { return JSON.parse(document.getElementById(el.dataset.src).textContent); }
  function dur(ns) {
    var a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(3) + " s";
    if (a >= 1e6) return (ns / 1e6).toFixed(2) + " ms";
    return (ns / 1e3).toFixed(1) + " µs";
  }
  function pct(x) { return (100 * x).toFixed(x < 0.001 ? 3 : 1) + "%"; }
  function si(x, unit) {
    var steps = [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
    for (var i = 0; i < steps.length; i++) {
      if (Math.abs(x) >= steps[i][0]) return parseFloat((x / steps[i][0]).toPrecision(3)) + " " + steps[i][1] + unit;
    }
    return parseFloat(x.toPrecision(3)) + " " + unit;
  }
  function el(tag, attrs, parent) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  var tip = document.createElement("div");
  tip.className = "tip";
  document.body.appendChild(tip);
  function showTip(ev, title, lines) {
    tip.textContent = "";
    var b = document.createElement("b"); b.textContent = title; tip.appendChild(b);
    lines.forEach(function (l) { var d = document.createElement("div"); d.textContent = l; tip.appendChild(d); });
    tip.style.display = "block";
    var x = ev.clientX + 14, y = ev.clientY + 14;
    var r = tip.getBoundingClientRect();
    if (x + r.width > window.innerWidth - 8) x = ev.clientX - r.width - 14;
    if (y + r.height > window.innerHeight - 8) y = ev.clientY - r.height - 14;
    tip.style.left = x + "px"; tip.style.top = y + "px";
  }
  function hideTip() { tip.style.display = "none"; }

  function hash(s) { var h = 0; for (var i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0; return Math.abs(h); }
  function shade(hex, s) {  // vary a base colour a little per frame name, keeping its hue
    var n = parseInt(hex.slice(1), 16), f = 0.86 + (hash(s) % 28) / 100;
    var r = Math.min(255, ((n >> 16) & 255) * f), g = Math.min(255, ((n >> 8) & 255) * f), b = Math.min(255, (n & 255) * f);
    return "rgb(" + (r | 0) + "," + (g | 0) + "," + (b | 0) + ")";
  }
  function frameColor(n) {
    if (n.kind === "kernel") return cssVar("--fam-" + (n.fam || "other"), "#9aa3ae");
    var base = { python: "--k-python", op: "--k-op", annotation: "--k-op", runtime: "--k-runtime", native: "--k-native" }[n.kind] || "--k-missing";
    return shade(cssVar(base, "#c9ced6"), n.name);
  }

  /* ---- flamegraph (icicle: root on top), SVG so drawn frames are countable DOM nodes ---- */
  function Flame(host) {
    var d = data(host), panel = host.closest(".panel");
    var root = { name: "all (" + d.title + ")", kind: "root", t: 0, c: 0, fam: "", kids: [], depth: 0, x: 0, parent: null };
    function build(arr, parent) {
      var x = parent.x;
      arr.forEach(function (a) {
        var n = { name: a[0], kind: a[1], t: a[2], c: a[3], fam: a[4], kids: [], depth: parent.depth + 1, x: x, parent: parent };
        x += n.t; parent.kids.push(n); build(a[5], n);
      });
    }
    d.roots.forEach(function (a) { root.t += a[2]; root.c += a[3]; });
    build(d.roots, root);
    var total = root.t || 1, focus = root, ROW = 18, re = null;
    var search = panel.querySelector(".fg-search"), status = panel.querySelector(".fg-status");
    function matches(n) { return re !== null && n.kind !== "root" && re.test(n.name); }
    function draw() {
      var W = host.clientWidth || 1000, scale = W / (focus.t || 1), x0 = focus.x;
      host.textContent = "";
      var svg = el("svg", { width: W, height: ROW }, host), maxDepth = 0, drawn = 0, hit = 0;
      function node(n, x, w, cls) {
        var g = el("g", { "class": cls }, svg), y = n.depth * ROW;
        el("rect", { x: x.toFixed(1), y: y, width: Math.max(w, 0.5).toFixed(1), height: ROW - 1, fill: n.kind === "root" ? "#d8dde5" : frameColor(n), rx: 1.5 }, g);
        if (w > 36) {
          var chars = Math.floor((w - 6) / 6.7), label = (n.kind === "kernel" ? "→ " : "") + n.name;
          var t = el("text", { x: (x + 3).toFixed(1), y: y + 12.5 }, g);
          t.textContent = label.length > chars ? label.slice(0, Math.max(chars - 1, 1)) + "…" : label;
        }
        g.addEventListener("mousemove", function (ev) {
          var lines = [dur(n.t) + " · " + pct(n.t / total) + " of all" + (focus !== root ? " · " + pct(n.t / (focus.t || 1)) + " of zoomed frame" : ""),
            (n.kind === "kernel" ? "kernel, family " + (n.fam || "other") : n.kind) + " · ×" + n.c.toLocaleString()];
          if (d.samples) lines.push("L1 sampled: times estimated from samples");
          showTip(ev, n.name, lines);
        });
        g.addEventListener("mouseleave", hideTip);
        g.addEventListener("click", function () { focus = n; draw(); });
        drawn++; if (/\bmatch\b/.test(cls)) hit++;
        if (n.depth > maxDepth) maxDepth = n.depth;
      }
      for (var a = focus.parent, anc = []; a; a = a.parent) anc.push(a);
      anc.forEach(function (n) { node(n, 0, W, "anc" + (matches(n) ? " match" : "")); });
      (function walk(n) {
        var x = (n.x - x0) * scale, w = n.t * scale;
        if (w < 0.4) return;
        node(n, x, w, matches(n) ? "match" : "");
        n.kids.forEach(walk);
      })(focus);
      svg.setAttribute("height", (maxDepth + 1) * ROW);
      host.dataset.drawn = drawn; host.dataset.highlighted = hit;
      host.classList.toggle("searching", re !== null);
      if (re !== null) {
        var t = 0;
        (function sum(n) { if (matches(n)) { t += n.t; return; } n.kids.forEach(sum); })(root);
        status.textContent = hit + " frames drawn match · " + dur(t) + " (" + pct(t / total) + " of all)";
      } else status.textContent = focus === root ? "" : "zoomed: " + focus.name.slice(0, 80);
    }
    search.addEventListener("input", function () {
      var q = search.value.trim();
      if (!q) re = null;
      else { try { re = new RegExp(q, "i"); } catch (e) { re = new RegExp(q.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "i"); } }
      draw();
    });
    panel.querySelector(".fg-reset").addEventListener("click", function () { focus = root; draw(); });
    window.addEventListener("resize", draw);
    draw();
  }

  /* ---- busy timeline: one row per device (union) and per stream, bucketed on the server ---- */
  function Timeline(host) {
    var d = data(host), LBL = 150, cv = document.createElement("canvas");
    host.appendChild(cv);
    var rows = [], y = 20;
    d.lanes.forEach(function (l) { var h = l.device ? 24 : 16; if (l.device) y += rows.length ? 26 : 16; rows.push({ l: l, y: y, h: h }); y += h + 3; });
    var H = y + 4, accent = cssVar("--fam-gemm", "#3b6fd8"), stream = cssVar("--fam-norm", "#2aa198");
    function draw() {
      var W = host.clientWidth || 1000, dpr = window.devicePixelRatio || 1;
      cv.width = W * dpr; cv.height = H * dpr; cv.style.height = H + "px";
      var c = cv.getContext("2d"); c.scale(dpr, dpr); c.clearRect(0, 0, W, H);
      var pw = W - LBL - 8;
      c.font = "11px system-ui, sans-serif"; c.fillStyle = "#667085";
      c.fillText("time, % of kernel span", 4, 11);
      for (var i = 0; i <= 10; i++) {
        var x = LBL + pw * i / 10;
        c.fillText(i * 10 + "%", i === 10 ? x - 26 : i === 0 ? x : x - 10, 11);
      }
      rows.forEach(function (r) {
        var l = r.l, n = l.b.length, bw = pw / n, span = (l.t1 - l.t0) / n;
        c.fillStyle = "#f2f4f7"; c.fillRect(LBL, r.y, pw, r.h);
        c.fillStyle = l.device ? accent : stream;
        for (var i = 0; i < n; i++) {
          var f = l.b[i] / span; if (f <= 0) continue;
          c.globalAlpha = 0.15 + 0.85 * Math.min(f, 1); c.fillRect(LBL + i * bw, r.y, Math.max(bw, 0.6), r.h);
        }
        c.globalAlpha = 1; c.fillStyle = "rgba(16,24,40,0.13)";
        for (var k = 1; k < 10; k++) c.fillRect(LBL + pw * k / 10, r.y, 1, r.h);
        c.fillStyle = "#1d2430";
        c.font = (l.device ? "600 " : "") + "11.5px system-ui, sans-serif";
        var label = l.label.length > 30 ? "…" + l.label.slice(-29) : l.label;
        c.fillText(label, l.device ? 4 : 16, r.y + r.h / 2 + 4);
        if (l.device) {
          c.fillStyle = "#344054"; c.font = "600 12px system-ui, sans-serif";
          c.fillText(l.group + " — kernel span " + dur(l.t1 - l.t0) + ", busy " + pct(l.busy / ((l.t1 - l.t0) || 1)), 4, r.y - 5);
        }
      });
    }
    cv.addEventListener("mousemove", function (ev) {
      var b = cv.getBoundingClientRect(), x = ev.clientX - b.left, yy = ev.clientY - b.top, pw = b.width - LBL - 8;
      var r = rows.filter(function (r) { return yy >= r.y && yy < r.y + r.h; })[0];
      if (!r || x < LBL || x > LBL + pw) { hideTip(); return; }
      var l = r.l, n = l.b.length, i = Math.min(n - 1, Math.floor((x - LBL) / pw * n)), span = (l.t1 - l.t0) / n;
      showTip(ev, l.label, ["slice " + dur(i * span) + " – " + dur((i + 1) * span) + " after the first kernel",
        "busy " + dur(l.b[i]) + " = " + pct(l.b[i] / span) + " of the slice",
        "lane: " + l.kernels.toLocaleString() + " kernels, busy " + pct(l.busy / ((l.t1 - l.t0) || 1)) + " of its span"]);
    });
    cv.addEventListener("mouseleave", hideTip);
    window.addEventListener("resize", draw);
    draw();
  }

  /* ---- roofline: log-log, achieved FLOP/s vs arithmetic intensity, datasheet ceilings ---- */
  function Roofline(host) {
    // ceiling labels sit in a legend above the plot (T grows with them): never over a point
    var d = data(host), W = Math.min(host.clientWidth || 900, 900), L = 70, R = 20, T = 16 + 16 * d.ceilings.length, B = 44, H = 364 + T;
    var xs = d.points.map(function (p) { return p.ai; }), ys = d.points.map(function (p) { return p.flops; });
    d.ceilings.forEach(function (c) { xs.push(c.flops / c.bw); ys.push(c.flops); });
    var x0 = Math.pow(10, Math.floor(Math.log10(Math.min.apply(null, xs)) - 0.5)), x1 = Math.pow(10, Math.ceil(Math.log10(Math.max.apply(null, xs)) + 0.5));
    var y0 = Math.pow(10, Math.floor(Math.log10(Math.min.apply(null, ys)) - 0.5)), y1 = Math.pow(10, Math.ceil(Math.log10(Math.max.apply(null, ys)) + 0.3));
    function X(v) { return L + (Math.log10(v) - Math.log10(x0)) / (Math.log10(x1) - Math.log10(x0)) * (W - L - R); }
    function Y(v) { return H - B - (Math.log10(v) - Math.log10(y0)) / (Math.log10(y1) - Math.log10(y0)) * (H - T - B); }
    var svg = el("svg", { width: W, height: H }, host), grid = el("g", { "class": "grid" }, svg), axis = el("g", { "class": "axis" }, svg);
    for (var e = Math.log10(x0); e <= Math.log10(x1) + 1e-9; e++) {
      var gx = X(Math.pow(10, e)); el("line", { x1: gx, x2: gx, y1: T, y2: H - B }, grid);
      el("text", { x: gx - 8, y: H - B + 15 }, axis).textContent = si(Math.pow(10, e), "").trim();
    }
    for (e = Math.log10(y0); e <= Math.log10(y1) + 1e-9; e++) {
      var gy = Y(Math.pow(10, e)); el("line", { x1: L, x2: W - R, y1: gy, y2: gy }, grid);
      el("text", { x: 4, y: gy + 4 }, axis).textContent = si(Math.pow(10, e), "FLOP/s");
    }
    el("text", { x: L + (W - L - R) / 2 - 110, y: H - 8 }, axis).textContent = "arithmetic intensity (FLOP per DRAM byte)";
    d.ceilings.forEach(function (c, i) {
      var ridge = c.flops / c.bw, path = "M" + X(x0) + "," + Y(c.bw * x0) + " L" + X(ridge) + "," + Y(c.flops) + " L" + X(x1) + "," + Y(c.flops);
      el("path", { d: path, fill: "none", stroke: "#344054", "stroke-width": 1.6 }, svg);
      var ly = 12 + 16 * i;
      el("line", { x1: L, x2: L + 18, y1: ly - 4, y2: ly - 4, stroke: "#344054", "stroke-width": 1.6 }, svg);
      var t = el("text", { x: L + 24, y: ly, "font-size": 11, fill: "#344054" }, svg);
      t.textContent = "roofline: " + c.hw + " " + (c.basis || "") + " peak " + si(c.flops, "FLOP/s") + " · DRAM " + si(c.bw, "B/s");
    });
    d.points.forEach(function (p) {
      var dot = el("circle", { cx: X(p.ai), cy: Y(p.flops), r: 6, fill: cssVar("--fam-" + (p.family || "other"), "#9aa3ae") }, svg);
      dot.addEventListener("mousemove", function (ev) {
        showTip(ev, p.name, [p.ai.toPrecision(3) + " FLOP/byte · " + si(p.flops, "FLOP/s") + (p.pct != null ? " (" + p.pct.toFixed(1) + "% " + (p.pctLabel || "of peak") + ")" : ""),
          (p.hw || "unknown GPU") + " · " + p.bound + (p.dur != null ? " · " + dur(p.dur) : "")]);
      });
      dot.addEventListener("mouseleave", hideTip);
    });
  }

  function each(sel, fn) { Array.prototype.forEach.call(document.querySelectorAll(sel), fn); }
  each(".flame[data-src]", Flame);
  each(".tl[data-src]", Timeline);
  each(".roof[data-src]", Roofline);
})();
