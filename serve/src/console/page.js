// The console's live page: polls /console/data (every 2 s) and /console/audit (every 15 s)
// and redraws each section. Everything from the server is written as text nodes, never as
// markup; plots are SVG built element by element.
"use strict";
(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const COLORS = ["#2458c6", "#c65a24", "#1e7b34", "#8e24c6", "#c6245a", "#24a0c6", "#7a6a00"];

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== undefined && v !== null) e.setAttribute(k, v);
    }
    for (const c of children) {
      if (c === null || c === undefined) continue;
      e.append(c instanceof Node ? c : String(c));
    }
    return e;
  }

  function svg(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    return e;
  }

  function fill(id, node) {
    const target = document.getElementById(id);
    target.replaceChildren(node);
  }

  function table(headers, rows, emptyText) {
    if (rows.length === 0) return el("p", { class: "empty" }, emptyText);
    const head = el("tr", {}, ...headers.map((h) => el("th", {}, h)));
    const body = rows.map((r) =>
      el("tr", {}, ...r.map((c) => (c instanceof Node && c.tagName === "TD" ? c : el("td", {}, c))))
    );
    return el("table", {}, el("thead", {}, head), el("tbody", {}, ...body));
  }

  function num(v) {
    return el("td", { class: "num" }, v === null || v === undefined ? "–" : String(v));
  }

  function ms(v) {
    if (v === null || v === undefined) return "–";
    if (v < 1000) return v + " ms";
    if (v < 120000) return (v / 1000).toFixed(1) + " s";
    return Math.round(v / 60000) + " min";
  }

  function ago(atMs, nowMs) {
    return ms(Math.max(0, nowMs - atMs)) + " ago";
  }

  function window_(w) {
    if (w % 86400000 === 0) return w / 86400000 === 1 ? "day" : w / 86400000 + " days";
    if (w % 3600000 === 0) return w / 3600000 === 1 ? "h" : w / 3600000 + " h";
    if (w % 60000 === 0) return w / 60000 === 1 ? "min" : w / 60000 + " min";
    return ms(w);
  }

  function scopes(d) {
    const rows = d.scopes.map((s) => {
      const limits = s.quotas.map((q) => q.limit + " " + q.dimension + "/" + window_(q.window_ms)).join(", ");
      const paced = s.quotas.map((q) => q.paced + "/" + window_(q.window_ms) + " (" + q.available + " now)").join(", ");
      const remaining = s.remaining
        .map((r) => (r.remaining ?? "?") + (r.limit ? " of " + r.limit : "") + " " + r.dimension)
        .join(", ");
      // A held scope waits for its hold, which says why; else what keeps a request out now.
      const why = s.held ? "held: " + s.held.reason + " (" + ms(s.held.left_ms) + " left)" : s.waiting_because;
      const next = !s.next_allowed_ms ? "now" : "in " + ms(s.next_allowed_ms);
      return [el("td", { class: "mono" }, s.key), limits || "–", paced || "–", remaining || "–", next,
        why || "–", num(s.queued), num(s.in_flight)];
    });
    fill("scopes", table(["scope", "limit", "paced rate", "remaining (provider)", "next allowed",
      "why calls wait", "queued", "in flight"], rows, "No scope yet: no call has been made."));
  }

  function plot(id, series, yMax, yLabel, nowMs, emptyText) {
    const target = document.getElementById(id);
    if (series.length === 0) {
      target.replaceChildren(el("p", { class: "empty" }, emptyText));
      return;
    }
    const W = 1000, H = 180, L = 50, R = 10, T = 10, B = 22, span = 300000;
    const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none", role: "img" });
    const x = (t) => L + ((t - (nowMs - span)) / span) * (W - L - R);
    const y = (v) => H - B - (Math.min(v, yMax) / yMax) * (H - T - B);
    for (const f of [0, 0.5, 1]) {
      chart.append(svg("line", { x1: L, x2: W - R, y1: y(yMax * f), y2: y(yMax * f), stroke: "#d8dde6" }));
      const t = svg("text", { x: L - 6, y: y(yMax * f) + 4, "text-anchor": "end", "font-size": 11, fill: "#5d6677" });
      t.textContent = yLabel(yMax * f);
      chart.append(t);
    }
    for (const m of [5, 4, 3, 2, 1, 0]) {
      const t = svg("text", { x: x(nowMs - m * 60000), y: H - 6, "text-anchor": "middle", "font-size": 11, fill: "#5d6677" });
      t.textContent = m === 0 ? "now" : "-" + m + " min";
      chart.append(t);
    }
    const legend = el("div", { class: "legend" });
    series.forEach((s, i) => {
      const color = COLORS[s.color % COLORS.length];
      const pts = s.points.filter((p) => p[0] >= nowMs - span).map((p) => x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1));
      if (pts.length > 0) {
        chart.append(svg("polyline", { points: pts.join(" "), fill: "none", stroke: color,
          "stroke-width": 2, "stroke-dasharray": s.dashed ? "6 4" : "none", "vector-effect": "non-scaling-stroke" }));
      }
      const swatch = el("span", { class: "swatch" });
      swatch.style.backgroundColor = color;
      legend.append(el("span", {}, swatch, s.name));
    });
    target.replaceChildren(chart, legend);
  }

  function plots(d) {
    const scopeNames = [...new Set(d.history.flatMap((h) => Object.keys(h.utilization)))];
    const util = scopeNames.map((name, i) => ({
      name, color: i, dashed: false,
      points: d.history.filter((h) => name in h.utilization).map((h) => [h.at_ms, h.utilization[name]]),
    }));
    plot("utilization-plot", util, 1, (v) => Math.round(v * 100) + "%", d.now_ms,
      "Nothing sampled yet.");
    const tenants = [...new Set(d.history.flatMap((h) => Object.keys(h.waits)))];
    const waits = [];
    let top = 10;
    tenants.forEach((name, i) => {
      for (const [q, dashed] of [["p50_ms", false], ["p99_ms", true]]) {
        const points = d.history.map((h) => [h.at_ms, h.waits[name] ? h.waits[name][q] : 0]);
        points.forEach((p) => { top = Math.max(top, p[1]); });
        waits.push({ name: name + " " + q.slice(0, 3), color: i, dashed, points });
      }
    });
    // A round top (10, 20, 50, 100, ... ms) keeps the axis' labels readable.
    const step = Math.pow(10, Math.floor(Math.log10(top)));
    top = [1, 2, 5, 10].map((m) => m * step).find((t) => t >= top);
    plot("waits-plot", waits, top, (v) => ms(Math.round(v)), d.now_ms,
      "No call has been admitted in the last 5 minutes.");
  }

  function traffic(d) {
    document.getElementById("totals").textContent =
      d.queued + " queued, " + d.in_flight + " in flight";
    fill("queue", table(["tenant", "tier", "class", "queued", "in flight"],
      d.queue.map((q) => [q.tenant, q.tier, q.class, num(q.queued), num(q.in_flight)]),
      "The queue is empty."));
    fill("holds", table(["scope", "why", "left"],
      d.holds.map((h) => [el("td", { class: "mono" }, h.scope), h.reason, ms(h.left_ms)]),
      "No scope is held."));
    const members = [];
    d.pools.forEach((p) => p.members.forEach((m) => members.push([
      el("td", { class: "mono" }, p.provider + " " + p.pool), el("td", { class: "mono" }, m.scope),
      num(m.weight), num(m.chosen),
      el("td", { class: m.held ? "bad" : "" }, m.held ? m.held.reason + " (" + ms(m.held.left_ms) + ")" : "–")])));
    fill("pools", table(["pool", "member", "weight", "calls", "held"], members,
      "No pool is configured."));
    fill("recent-429s", table(["when", "path", "tenant", "attempt"],
      d.recent_429s.slice().reverse().slice(0, 20).map((r) =>
        [ago(r.at_ms, d.now_ms), el("td", { class: "mono" }, r.path), r.tenant, num(r.attempt)]),
      "No 429 since the sidecar started."));
    fill("breakers", table(["path", "state", "failure", "in a row", "retried in"],
      d.breakers.map((b) => [el("td", { class: "mono" }, b.route),
        el("td", { class: b.state === "open" ? "bad" : "" }, b.state), b.error, num(b.failures),
        b.state === "open" ? ms(b.retry_in_ms) : "–"]),
      "Every breaker is closed: no path has failed."));
  }

  function escalations(d) {
    fill("escalations", table(["id", "kind", "task", "action", "reason", "raised", ""],
      d.escalations.map((e) => {
        const link = el("a", { href: "/console/escalations/" + e.id, class: "open-escalation",
          "data-id": String(e.id) }, "Decide");
        return [num(e.id), e.kind, e.task, e.action ?? "–", e.reason ?? "–", ago(e.created_ms, d.now_ms),
          el("td", {}, link)];
      }),
      "No open escalation."));
  }

  function audit(a) {
    const rows = [];
    if (a.result === "ok") {
      rows.push(el("p", { id: "audit-state" }, el("span", { class: "ok" }, "verified"),
        " — " + a.records + " records, " + a.checkpoints + " checkpoints" +
        (a.unsigned_tail ? ", " + a.unsigned_tail + " after the last checkpoint (signed at the next)" : "") +
        (a.witnessed !== null && a.witnessed !== undefined ? ", witness holds " + a.witnessed : "")));
    } else if (a.result === "failed") {
      rows.push(el("p", { id: "audit-state" }, el("span", { class: "bad" }, "DOES NOT VERIFY"),
        " — " + a.error.message));
    } else {
      rows.push(el("p", { id: "audit-state", class: "error" },
        (a.error && a.error.message) || "the audit log could not be verified"));
    }
    rows.push(el("p", {}, "Signing key: ", el("code", { id: "audit-key" }, a.key || "–")));
    rows.push(el("p", { class: "hint" }, "Log: ", el("code", {}, a.log || "–")));
    document.getElementById("audit").replaceChildren(...rows);
  }

  async function get(path) {
    const r = await fetch(path, { credentials: "same-origin", cache: "no-store" });
    if (r.status === 401) {
      window.location.assign("/console");
      throw new Error("signed out");
    }
    return r.json();
  }

  async function poll() {
    try {
      const d = await get("/console/data");
      escalations(d);
      scopes(d);
      plots(d);
      traffic(d);
      document.getElementById("updated").textContent = new Date(d.now_ms).toLocaleTimeString();
    } catch (e) {
      document.getElementById("updated").textContent = "not updated: " + e.message;
    }
  }

  async function pollAudit() {
    try {
      audit(await get("/console/audit"));
    } catch (e) {
      document.getElementById("audit").textContent = "not updated: " + e.message;
    }
  }

  poll();
  pollAudit();
  setInterval(poll, 2000);
  setInterval(pollAudit, 15000);
})();
