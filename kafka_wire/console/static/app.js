// kafka-wire console: polls /api/snapshot every few seconds and redraws.
// Handwritten, no dependencies. Selection lives in the URL hash:
// #/<namespace>/<hub> (overview) or #/<namespace>/<hub>/events?partition=..&from=..&value=..
// (the Data Explorer, explorer.js). On a namespace that requires auth, requests carry
// a SAS token made from the connection string the user signs in with (sessionStorage).
"use strict";

const REFRESH_MS = 3000;
const TIMEOUT_MS = 5000;
const state = { paused: false, timer: null, data: null, unit: "bytes", open: new Set(), treeKey: "" };
const TOKEN_KEY = "kafka-wire.token.";
const $ = (id) => document.getElementById(id);

// -- small helpers -------------------------------------------------------------------
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}
const fmtInt = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"));
function fmtBytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? Math.round(n) : n.toFixed(n < 10 ? 2 : 1)) + " " + units[i];
}
function fmtRate(n, unit) {
  if (unit === "bytes") return fmtBytes(n || 0) + "/s";
  return (!n ? "0" : n < 10 ? n.toFixed(1) : fmtInt(Math.round(n))) + " ev/s";
}
function fmtDuration(s) {
  if (s < 60) return Math.round(s) + "s";
  if (s < 3600) return Math.floor(s / 60) + "m " + Math.round(s % 60) + "s";
  return Math.floor(s / 3600) + "h " + Math.floor((s % 3600) / 60) + "m";
}
const fmtTime = (ms) => new Date(ms).toLocaleTimeString("en-GB");

// The URL hash: namespace, hub, view ("overview" or "events") and the explorer's position.
function route() {
  const [path, qs] = location.hash.replace(/^#\/?/, "").split("?");
  const parts = path.split("/").map((p) => { try { return decodeURIComponent(p); } catch (e) { return p; } });
  return { ns: parts[0] || null, hub: parts[1] || null, view: parts[2] === "events" ? "events" : "overview",
    params: new URLSearchParams(qs || "") };
}
function selection() {
  const r = route();
  return r.ns && r.hub ? { ns: r.ns, hub: r.hub } : null;
}
function hubHref(ns, hub, view, params) {
  let href = "#/" + encodeURIComponent(ns) + "/" + encodeURIComponent(hub);
  if (view === "events") href += "/events" + (params ? "?" + new URLSearchParams(params) : "");
  return href;
}
const tokenFor = (ns) => (ns ? sessionStorage.getItem(TOKEN_KEY + ns) : null);

// Rebuilding a region must not lose the keyboard focus: elements carry data-key,
// and the focused one is focused again after the rebuild.
function rebuild(container, ...children) {
  const active = document.activeElement;
  const key = active && container.contains(active) ? active.dataset.key : null;
  const scroll = container.scrollTop;
  container.replaceChildren(...children);
  container.scrollTop = scroll;
  if (key) {
    const again = container.querySelector(`[data-key="${CSS.escape(key)}"]`);
    if (again) again.focus({ preventScroll: true });
  }
}

function table(columns, rows, empty) {
  const head = h("thead", null, h("tr", null, columns.map((c) => h("th", { scope: "col", class: c.num ? "num" : null }, c.label))));
  const body = h("tbody", null, rows.length ? rows.map((r) => h("tr", { class: r.cls || null },
    columns.map((c, i) => h(i === 0 ? "th" : "td", { scope: i === 0 ? "row" : null, class: c.cls || (c.num ? "num" : null) }, r.cells[i]))))
    : h("tr", { class: "empty" }, h("td", { colspan: columns.length }, empty)));
  return [head, body];
}

// -- fetching --------------------------------------------------------------------------
// A request about namespace ``ns`` carries its token, when signed in to it.
async function api(url, ns, options) {
  const ctl = new AbortController();
  const t = setTimeout(() => ctl.abort(), TIMEOUT_MS);
  const headers = Object.assign({}, (options && options.headers) || {});
  const token = tokenFor(ns);
  if (token) headers.Authorization = token;
  try {
    const r = await fetch(url, Object.assign({ cache: "no-store" }, options || {}, { signal: ctl.signal, headers }));
    if (r.status === 401 && token) {  // a wrong or expired token is forgotten; one without a right is not
      const why = await r.clone().json().catch(() => ({}));
      if (why.token_refused) sessionStorage.removeItem(TOKEN_KEY + ns);
    }
    return r;
  } finally { clearTimeout(t); }
}
async function getJSON(url, ns) {
  const r = await api(url, ns);
  return { status: r.status, body: await r.json() };
}

async function refresh() {
  clearTimeout(state.timer);
  const r = route();
  const q = r.ns ? `?namespace=${encodeURIComponent(r.ns)}` + (r.hub ? `&hub=${encodeURIComponent(r.hub)}` : "") : "";
  try {
    const [snap, health] = await Promise.all([getJSON("/api/snapshot" + q, r.ns), getJSON("/health")]);
    state.data = snap.body;
    render(snap.body, health);
    $("status").textContent = (state.paused ? "Paused · " : "Updated ") + fmtTime(Date.now());
  } catch (err) {
    $("health").className = "dot bad";
    $("health").setAttribute("aria-label", "broker unreachable");
    $("status").textContent = "Broker unreachable, retrying…";
  }
  clearTimeout(state.timer);
  if (!state.paused) state.timer = setTimeout(refresh, REFRESH_MS);
}

// -- rendering -------------------------------------------------------------------------
function render(d, health) {
  const ok = health.status === 200;
  $("health").className = "dot " + (ok ? "ok" : "bad");
  $("health").setAttribute("aria-label", ok ? "healthy" : "unhealthy");
  const b = d.broker;
  const conns = Object.values(b.connections || {}).reduce((a, n) => a + n, 0);
  rebuild($("facts"), ...[["bootstrap", b.bootstrap_servers], ["cluster", b.cluster_id],
    ["version", b.version], ["uptime", fmtDuration(b.uptime_s)], ["connections", fmtInt(conns)]]
    .map(([k, v]) => h("div", null, h("dt", null, k), h("dd", null, v))));
  renderTree(d.namespaces);
  const r = route();
  const sel = selection();
  if (!sel) {
    // First load (or a namespace's link): its first hub, else the first hub there is; a
    // namespace that needs signing in asks for a connection string.
    const open = d.namespaces.filter((ns) => !ns.locked && (!r.ns || ns.name === r.ns));
    const first = open.flatMap((ns) => ns.hubs.map((hub) => ({ ns: ns.name, hub: hub.name })))[0];
    if (first) { history.replaceState(null, "", hubHref(first.ns, first.hub)); refresh(); return; }
    const locked = d.namespaces.find((ns) => ns.locked && (!r.ns || ns.name === r.ns));
    if (locked) { showSignIn(locked.name, `Namespace ${locked.name} requires a connection string.`); }
  }
  if (d.hub_error && d.hub_error.token_refused && r.ns) sessionStorage.removeItem(TOKEN_KEY + r.ns);
  const needsSignIn = sel && d.hub_error && d.hub_error.auth_required;
  if (needsSignIn) showSignIn(sel.ns, d.hub_error.error);
  else if (sel || !d.namespaces.some((ns) => ns.locked)) $("signin").hidden = true;
  renderHub(d.hub, sel, d.hub_error);
  renderTabs(d.hub, r, d.namespaces);
  renderThrottling(d.throttling);
  renderFaults(d.faults_fired || []);
  renderCapture(d.capture_files, d.capture_directories);
}

function renderTree(namespaces) {
  const sel = selection();
  const key = JSON.stringify(namespaces.map((ns) => [ns.name, ns.locked, ns.hubs.map((x) => x.name),
    !!ns.geo, (ns.geo_dr || []).length]));
  if (key !== state.treeKey) {
    state.treeKey = key;
    rebuild($("tree"), ...namespaces.map((ns) => h("section", { class: "ns", "aria-label": "namespace " + ns.name },
      h("h3", null, ns.name, ns.tier ? h("span", { class: "badge" }, ns.tier) : null,
        ns.throughput_units ? h("span", { class: "badge", title: "throughput units" }, ns.throughput_units + " TU") : null,
        h("span", { class: "badge warn", "data-throttle": ns.name, hidden: true })),
      ns.geo || (ns.geo_dr || []).length ? h("div", { class: "geo", "data-geo": ns.name }) : null,
      ns.hubs.length ? h("ul", { class: "hubs" }, ns.hubs.map((hub) => h("li", null,
        h("a", { href: hubHref(ns.name, hub.name), "data-key": ns.name + "/" + hub.name },
          hub.name, h("small", { "data-stats": ns.name + "/" + hub.name })))))
        : ns.locked ? h("p", null, h("a", { class: "signin-link", href: "#/" + encodeURIComponent(ns.name), "data-key": "signin:" + ns.name },
          "Sign in to see its hubs"))
        : h("p", { class: "muted" }, "No event hubs yet"))));
  }
  for (const ns of namespaces) {
    const g = $("tree").querySelector(`[data-geo="${CSS.escape(ns.name)}"]`);
    if (g) renderGeo(g, ns);
    const t = $("tree").querySelector(`[data-throttle="${CSS.escape(ns.name)}"]`);
    if (t) { t.hidden = !ns.throttled_requests; t.textContent = fmtInt(ns.throttled_requests) + " throttled"; }
    for (const hub of ns.hubs) {
      const k = ns.name + "/" + hub.name;
      const s = $("tree").querySelector(`[data-stats="${CSS.escape(k)}"]`);
      if (s) s.textContent = `${hub.partitions} partition${hub.partitions === 1 ? "" : "s"} · ${fmtBytes(hub.size_bytes)} · ${fmtRate(hub.rates.incoming_events_per_s, "events")} in`;
      const a = $("tree").querySelector(`a[data-key="${CSS.escape(k)}"]`);
      if (a) {
        if (sel && sel.ns === ns.name && sel.hub === hub.name) a.setAttribute("aria-current", "page");
        else a.removeAttribute("aria-current");
      }
    }
  }
}

// A namespace's replicas (geo-replication: role, location, lag, paused) and Geo-DR aliases.
function renderGeo(el, ns) {
  const rows = [];
  if (ns.geo) {
    rows.push(h("div", { class: "geo-head" }, "Replicas",
      h("span", { class: "muted" }, ns.geo.synchronous ? " synchronous" : ` async, max lag ${fmtDuration(ns.geo.max_lag_seconds)}`)));
    for (const r of ns.geo.replicas) {
      rows.push(h("div", { class: "replica", "data-location": r.location },
        h("span", { class: r.role === "Primary" ? "badge ok" : "badge" }, r.role),
        h("span", { class: "loc" }, r.location),
        r.role === "Primary" ? null : h("span", { class: r.lag_seconds > 0 ? "lag warn" : "lag" },
          `lag ${r.lag_seconds.toFixed(1)} s · ${fmtInt(r.lag_events)} events`),
        r.paused ? h("span", { class: "badge warn" }, "paused") : null));
    }
  }
  for (const p of ns.geo_dr || []) {
    rows.push(h("div", { class: "replica", "data-alias": p.alias }, h("span", { class: "badge" }, "Geo-DR " + p.role),
      h("span", { class: "loc", title: p.host }, "alias " + p.alias),
      p.partner ? h("span", { class: "muted" }, (p.role === "Secondary" ? "from " : "to ") + p.partner) : null));
  }
  rebuild(el, ...rows);
}

function renderHub(hub, sel, problem) {
  if (!hub) {
    const locked = !$("signin").hidden;
    $("hub-title").textContent = locked ? "Sign in to see this namespace"
      : sel ? (problem && problem.status !== 404 ? `Event hub ${sel.hub}: ${problem.error}` : `Event hub ${sel.hub} not found`)
      : "No event hubs yet";
    $("hub-sub").textContent = sel ? `in namespace ${sel.ns}` : locked ? "" : "Create one with a Kafka client, the management API or a config file.";
    rebuild($("cards")); rebuild($("partitions")); rebuild($("groups"));
    drawChart([]);
    return;
  }
  $("hub-title").textContent = hub.name;
  $("hub-sub").textContent = `event hub in namespace ${hub.namespace}`;
  const r = hub.rates;
  const lagging = hub.consumer_groups.filter((g) => g.total_lag > 0).length;
  rebuild($("cards"), ...[
    ["Partitions", fmtInt(hub.partitions)], ["Events retained", fmtInt(hub.events)],
    ["Size", fmtBytes(hub.size_bytes)],
    ["Incoming", fmtRate(r.incoming_bytes_per_s, "bytes"), fmtRate(r.incoming_events_per_s, "events")],
    ["Outgoing", fmtRate(r.outgoing_bytes_per_s, "bytes"), fmtRate(r.outgoing_events_per_s, "events")],
    ["Consumer groups", fmtInt(hub.consumer_groups.length), lagging ? `${lagging} lagging` : null, "note lag"],
    ["Throttled", fmtInt(hub.throttled_requests || 0),
      hub.throttled_requests ? `${fmtInt(hub.throttled_ms)} ms in all` : null, "note lag"],
  ].map(([k, v, note, cls]) => h("div", { class: "card" }, h("div", { class: "label" }, k),
    h("div", { class: "value" }, v, note ? h("span", { class: cls || "note" }, note) : null))));
  drawChart(hub.throughput);
  const cols = [{ label: "Partition" }, { label: "First seq. no.", num: true }, { label: "Last seq. no.", num: true },
    { label: "Events", num: true }, { label: "Size", num: true }, { label: "In", num: true }, { label: "Out", num: true },
    { label: "Events in", num: true }, { label: "Events out", num: true }];
  rebuild($("partitions"), ...table(cols, hub.partition_list.map((p) => ({ cells: [
    h("a", { href: hubHref(hub.namespace, hub.name, "events", { partition: p.partition, from: "latest" }),
      title: `The newest events of partition ${p.partition}`, "data-key": "p:" + p.partition }, String(p.partition)),
    fmtInt(p.log_start_offset), fmtInt(p.last_sequence_number),
    fmtInt(p.log_end_offset - p.log_start_offset), fmtBytes(p.size_bytes),
    fmtRate(p.rates.incoming_bytes_per_s, "bytes"), fmtRate(p.rates.outgoing_bytes_per_s, "bytes"),
    fmtInt(p.incoming_events), fmtInt(p.outgoing_events)] })), "No partitions"));
  renderGroups(hub);
}

function renderGroups(hub) {
  const groups = hub.consumer_groups;
  // The page as it stands says which groups are open: a click just before this redraw has
  // opened its details, but its toggle event (which records it) comes after.
  for (const d of $("groups").querySelectorAll("details.group > summary[data-key]")) {
    const k = d.dataset.key.slice(2);
    if (d.parentElement.open) state.open.add(k); else state.open.delete(k);
  }
  if (!groups.length) { rebuild($("groups"), h("p", { class: "muted" }, "No consumer groups")); return; }
  rebuild($("groups"), ...groups.map((g) => {
    const key = hub.namespace + "/" + hub.name + "/" + g.name;
    const lag = g.total_lag;
    const det = h("details", { class: "group", open: state.open.has(key), "data-group": g.name },
      h("summary", { "data-key": "g:" + key },
        h("span", { class: "gname", title: g.name }, g.name),
        h("span", null, g.kafka_group ? `${g.type} · ${g.state}` : h("span", { class: "muted" }, "Event Hubs group")),
        h("span", null, `${g.members.length} member${g.members.length === 1 ? "" : "s"}`),
        h("span", { class: lag > 0 ? "lag" : null, "data-lag": g.name }, lag === null ? h("span", { class: "muted" }, "no checkpoints") : `lag ${fmtInt(lag)}`)),
      h("div", { class: "group-body" },
        h("div", null, h("h4", null, "Checkpoints"), h("table", null, ...table(
          [{ label: "Partition" }, { label: "Checkpoint", num: true }, { label: "Last seq. no.", num: true }, { label: "Lag", num: true }, { label: "Owner" }],
          g.partitions.map((p) => ({ cells: [String(p.partition), p.sequence_number === null ? "–"
            : h("a", { href: hubHref(hub.namespace, hub.name, "events", { partition: p.partition, from: "sequence",
              value: Math.max(0, p.sequence_number - 5), mark: p.sequence_number }), title: "The events around this checkpoint",
              "data-key": "cp:" + key + "/" + p.partition }, fmtInt(p.sequence_number)),
            fmtInt(p.last_sequence_number),
            p.lag === null ? "–" : h("span", { class: p.lag > 0 ? "lag" : null }, fmtInt(p.lag)),
            p.owner ? h("span", { class: "owner", title: p.owner }, p.owner) : "–"] })), "No partitions"))),
        g.lag_history && g.lag_history.length ? h("div", { class: "lag-box" }, h("h4", null, "Lag per partition, last minutes"),
          h("canvas", { class: "lag-chart", "data-lag-chart": g.name, role: "img",
            "aria-label": `Lag of ${g.name} per partition over the last ${fmtDuration((g.lag_history[g.lag_history.length - 1].time_ms - g.lag_history[0].time_ms) / 1000)}` }),
          h("p", { class: "legend" }, g.partitions.map((p) => [h("span", { class: "key", style: `background: var(${LAG_COLORS[p.partition % LAG_COLORS.length]})` }),
            ` partition ${p.partition} `]))) : null,
        h("div", null, h("h4", null, "Members and assignments"), g.members.length
          ? h("ul", { class: "members" }, g.members.map((m) => h("li", null, h("code", null, m.client_id || m.member_id),
            " on ", (m.client_host || "?").replace(/^\//, ""), " → ", m.partitions.length ? "partitions " + m.partitions.join(", ") : "no partitions")))
          : h("p", { class: "muted" }, "No members connected"))));
    det.addEventListener("toggle", () => {
      if (det.open) state.open.add(key); else state.open.delete(key);
      if (det.open) drawLag(det.querySelector("canvas.lag-chart"), g.lag_history);
    });
    return det;
  }));
  for (const g of groups) {
    const canvas = $("groups").querySelector(`canvas[data-lag-chart="${CSS.escape(g.name)}"]`);
    if (canvas && canvas.closest("details").open) drawLag(canvas, g.lag_history);
  }
}

// A group's lag per partition over time: one line per partition, the newest sample on the right.
const LAG_COLORS = ["--in", "--out", "--ok", "--warn", "--bad", "--muted"];
function drawLag(canvas, history) {
  if (!canvas || !history || !history.length) return;
  const css = getComputedStyle(document.documentElement);
  const { ctx, w, ht } = canvasFor(canvas, 300, 90);
  const pad = { l: 44, r: 6, t: 6, b: 14 };
  const pw = w - pad.l - pad.r, ph = ht - pad.t - pad.b;
  const t0 = history[0].time_ms, t1 = Math.max(history[history.length - 1].time_ms, t0 + 1);
  let max = 0;
  for (const s of history) for (const v of s.lags) if (v !== null) max = Math.max(max, v);
  max = niceMax(max || 10, 1000);
  ctx.font = "10px system-ui, sans-serif"; ctx.fillStyle = css.getPropertyValue("--muted").trim();
  ctx.textAlign = "right"; ctx.textBaseline = "middle";
  ctx.fillText(fmtInt(max), pad.l - 4, pad.t); ctx.fillText("0", pad.l - 4, pad.t + ph);
  ctx.textAlign = "left"; ctx.textBaseline = "top";
  ctx.fillText("-" + fmtDuration((t1 - t0) / 1000), pad.l, pad.t + ph + 2);
  ctx.textAlign = "right"; ctx.fillText("now", pad.l + pw, pad.t + ph + 2);
  const partitions = history[history.length - 1].lags.length;
  for (let p = 0; p < partitions; p++) {
    ctx.strokeStyle = css.getPropertyValue(LAG_COLORS[p % LAG_COLORS.length]).trim();
    ctx.lineWidth = 1.5; ctx.beginPath();
    let started = false;
    for (const s of history) {
      const v = s.lags[p];
      if (v === null || v === undefined) continue;
      const x = pad.l + (pw * (s.time_ms - t0)) / (t1 - t0), y = pad.t + ph - (ph * v) / max;
      if (started) ctx.lineTo(x, y); else { ctx.moveTo(x, y); started = true; }
    }
    ctx.stroke();
  }
}

// -- tabs and signing in ------------------------------------------------------------------
function renderTabs(hub, r, namespaces) {
  $("tabs").hidden = !hub;
  const events = r.view === "events" && !!hub;
  $("overview").hidden = events;
  $("explorer").hidden = !events;
  const ns = namespaces.find((n) => n.name === r.ns);
  const who = ns && ns.signed_in_as;
  rebuild($("signed-in"), ...(who ? ["Signed in as ", h("code", null, who), " ", h("button", { type: "button", id: "signout",
    onclick: () => { sessionStorage.removeItem(TOKEN_KEY + r.ns); refresh(); } }, "Sign out")] : []));
  if (!hub) return;
  $("tab-overview").href = hubHref(hub.namespace, hub.name);
  $("tab-events").href = hubHref(hub.namespace, hub.name, "events", r.view === "events" ? r.params : null);
  for (const [id, on] of [["tab-overview", !events], ["tab-events", events]]) {
    if (on) $(id).setAttribute("aria-current", "page"); else $(id).removeAttribute("aria-current");
  }
  if (events) explorerShow(hub, r); else explorerHide();
}

function showSignIn(ns, why) {
  const form = $("signin");
  if (form.hidden || form.dataset.ns !== ns) {
    form.dataset.ns = ns;
    $("signin-title").textContent = `Sign in to namespace ${ns}`;
    $("signin-error").textContent = "";
  }
  $("signin-why").textContent = why || "";
  form.hidden = false;
}

async function signIn(e) {
  e.preventDefault();
  const ns = $("signin").dataset.ns;
  $("signin-error").textContent = "";
  try {
    const r = await fetch(`/api/namespaces/${encodeURIComponent(ns)}/token`, { method: "POST",
      headers: { "Content-Type": "application/json" }, body: JSON.stringify({ connection_string: $("signin-cs").value.trim() }) });
    const body = await r.json();
    if (r.status !== 200) { $("signin-error").textContent = body.error || `refused (${r.status})`; return; }
    sessionStorage.setItem(TOKEN_KEY + ns, body.token);
    $("signin-cs").value = "";
    $("signin").hidden = true;
    refresh();
  } catch (err) {
    $("signin-error").textContent = "The broker did not answer: " + err;
  }
}

function renderThrottling(events) {
  rebuild($("throttling"), ...table([{ label: "Time" }, { label: "Namespace" }, { label: "Hub" }, { label: "API" }, { label: "Client" }, { label: "Delay", num: true }],
    events.map((e) => ({ cells: [fmtTime(e.time_ms), e.namespace, e.hub || "–", e.api || "–", e.client_id || "–", fmtInt(e.throttle_ms) + " ms"] })),
    "No request has been throttled"));
}

function renderFaults(fired) {
  rebuild($("faults"), ...table([{ label: "Time" }, { label: "Fault" }, { label: "Namespace" }, { label: "Hub" }, { label: "Partition", num: true }, { label: "Client" }],
    fired.map((f) => ({ cells: [fmtTime(f.at_ms), f.kind, f.namespace || "–", f.hub || "–", f.partition == null ? "–" : String(f.partition), f.client || "–"] })),
    "No injected fault has fired (docs/faults.md)"));
}

function renderCapture(files, dirs) {
  const none = dirs && dirs.length ? "No Capture files yet" : "Capture output not configured (kafka-wire serve --capture-dir)";
  rebuild($("capture"), ...table([{ label: "Time" }, { label: "Hub" }, { label: "Partition", num: true }, { label: "Events", num: true }, { label: "Size", num: true }, { label: "File", cls: "file" }],
    files.map((f) => {
      const name = f.name || f.file;
      const prefix = f.namespace + "/" + f.hub + "/";  // already in the Hub column
      const when = f.time ? String(f.time).replace("T", " ").replace(/(\.\d+)?Z?$/, "").slice(5) : "–";
      return { cells: [when, f.hub, f.partition, fmtInt(f.events), fmtBytes(f.size_bytes),
        h("span", { title: f.file }, name.startsWith(prefix) ? name.slice(prefix.length) : name)] };
    }),
    none));
}

// -- chart -------------------------------------------------------------------------------
// A cleared 2D context sized to the canvas's CSS box, sharp on high-DPI screens.
function canvasFor(canvas, width, height) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth || width, ht = canvas.clientHeight || height;
  canvas.width = Math.round(w * dpr); canvas.height = Math.round(ht * dpr);
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, ht);
  return { ctx, w, ht };
}

function drawChart(series) {
  const canvas = $("chart");
  const css = getComputedStyle(document.documentElement);
  const color = (v) => css.getPropertyValue(v).trim();
  const { ctx, w, ht } = canvasFor(canvas, 600, 180);
  const unit = state.unit;
  const inKey = unit === "bytes" ? "incoming_bytes_per_s" : "incoming_events_per_s";
  const outKey = unit === "bytes" ? "outgoing_bytes_per_s" : "outgoing_events_per_s";
  const pad = { l: 78, r: 12, t: 10, b: 22 };
  const pw = w - pad.l - pad.r, ph = ht - pad.t - pad.b;
  // Five minutes once there is that much history; until then the history there is (≥ 1 min).
  // The broker's clock, not the browser's: the right edge is when the snapshot was taken.
  const now = state.data && state.data.broker ? state.data.broker.time_ms : Date.now();
  const span = Math.min(5 * 60000, Math.max(30000, series.length ? now - series[0].time_ms : 0));
  let max = 0;
  for (const s of series) max = Math.max(max, s[inKey], s[outKey]);
  max = niceMax(max || (unit === "bytes" ? 1024 : 10), unit === "bytes" ? 1024 : 1000);
  ctx.font = "11px system-ui, sans-serif";
  ctx.fillStyle = color("--muted"); ctx.strokeStyle = color("--line"); ctx.lineWidth = 1;
  ctx.textAlign = "right"; ctx.textBaseline = "middle";
  for (let i = 0; i <= 4; i++) {
    const y = pad.t + ph - (ph * i) / 4;
    ctx.beginPath(); ctx.moveTo(pad.l, Math.round(y) + 0.5); ctx.lineTo(w - pad.r, Math.round(y) + 0.5); ctx.stroke();
    ctx.fillText(fmtRate((max * i) / 4, unit), pad.l - 6, y);
  }
  ctx.textAlign = "center"; ctx.textBaseline = "top";
  for (let i = 5; i >= 0; i--) {
    const x = pad.l + pw - (pw * i) / 5;
    const ago = Math.round((span * i) / 5 / 1000);
    ctx.fillText(i ? "-" + (ago % 60 ? ago + "s" : ago / 60 + "m") : "now", x, pad.t + ph + 6);
  }
  const xOf = (t) => pad.l + pw - (pw * (now - t)) / span;
  const yOf = (v) => pad.t + ph - (ph * v) / max;
  for (const [key, col] of [[inKey, "--in"], [outKey, "--out"]]) {
    const pts = series.filter((s) => now - s.time_ms <= span);
    if (!pts.length) continue;
    ctx.strokeStyle = color(col); ctx.lineWidth = 2; ctx.lineJoin = "round";
    ctx.beginPath();
    pts.forEach((s, i) => (i ? ctx.lineTo(xOf(s.time_ms), yOf(s[key])) : ctx.moveTo(xOf(s.time_ms), yOf(s[key]))));
    ctx.stroke();
  }
  const last = series[series.length - 1];
  const text = last ? `now: ${fmtRate(last[inKey], unit)} in, ${fmtRate(last[outKey], unit)} out` : "no traffic sampled yet";
  canvas.setAttribute("aria-label", `Throughput over the last ${fmtDuration(span / 1000)} in ${unit} per second; ${text}`);
  $("chart-note").textContent = "· " + text;
}
// A round axis maximum: 1, 2, 4, 5, 8 or 10 × a power of ten, counted in KiB/MiB for bytes.
function niceMax(v, base) {
  let scale = 1;
  while (base === 1024 && v / scale >= 1024) scale *= 1024;
  const x = v / scale;
  const p = Math.pow(10, Math.floor(Math.log10(x)));
  for (const m of [1, 2, 4, 5, 8, 10]) if (m * p >= x) return m * p * scale;
  return 10 * p * scale;
}

// -- interaction ---------------------------------------------------------------------------
function setPaused(p) {
  state.paused = p;
  $("pause").setAttribute("aria-pressed", String(p));
  $("pause").textContent = p ? "Resume" : "Pause";
  if (p) { clearTimeout(state.timer); $("status").textContent = "Paused"; } else refresh();
}

document.addEventListener("DOMContentLoaded", () => {
  $("pause").addEventListener("click", () => setPaused(!state.paused));
  for (const r of document.querySelectorAll('input[name="unit"]')) {
    r.addEventListener("change", () => { state.unit = r.value; if (state.data && state.data.hub) drawChart(state.data.hub.throughput); });
  }
  window.addEventListener("hashchange", () => { refresh(); });
  $("signin").addEventListener("submit", signIn);
  window.addEventListener("resize", () => { if (state.data && state.data.hub) drawChart(state.data.hub.throughput); });
  $("nav").addEventListener("keydown", (e) => {
    if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
    const links = [...$("nav").querySelectorAll(".hubs a")];
    const i = links.indexOf(document.activeElement);
    if (!links.length) return;
    e.preventDefault();
    const next = i < 0 ? 0 : (i + (e.key === "ArrowDown" ? 1 : -1) + links.length) % links.length;
    links[next].focus();
  });
  document.addEventListener("keydown", (e) => {
    const t = e.target;
    const typing = t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement || t instanceof HTMLSelectElement;
    if (e.key === "p" && !e.ctrlKey && !e.metaKey && !e.altKey && !typing) setPaused(!state.paused);
  });
  refresh();
});
