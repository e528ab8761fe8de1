// kafka-wire console: the Data Explorer (browse, search, follow and send events).
// Uses app.js's helpers (h, $, rebuild, api, route, hubHref, fmt*). Its position lives in
// the URL: #/<ns>/<hub>/events?partition=P&from=earliest|latest|sequence|offset|time&value=V
// &count=N[&before=SEQ][&q=TEXT][&mark=SEQ]; the API is documented in docs/console-api.md.
"use strict";

const FOLLOW_MS = 1000;
const KEEP_ROWS = 500;  // follow mode keeps the newest this many events on the page
const SEARCH_ROUNDS = 200;
const ex = { key: null, hub: null, partitions: 0, events: [], unreadable: [], open: new Set(), page: null, timer: null, loading: false };

function explorerShow(hub, r) {
  ex.hub = hub;
  if (hub.partitions !== ex.partitions) {
    ex.partitions = hub.partitions;
    const opts = () => Array.from({ length: hub.partitions }, (_, i) => h("option", { value: String(i) }, String(i)));
    rebuild($("ex-partition"), ...opts());
    rebuild($("send-partition"), ...opts());
  }
  const key = hub.namespace + "/" + hub.name + "?" + r.params.toString();
  if (key === ex.key) return;
  ex.key = key;
  ex.open.clear();
  setForm(r.params);
  load(r.params);
}

function explorerHide() {
  stopFollow();
  ex.key = null;  // coming back loads afresh
}

function paramsOf(r) {
  const p = new URLSearchParams(r);
  if (!p.get("partition")) p.set("partition", "0");
  return p;
}

function setForm(params) {
  const p = paramsOf(params);
  $("ex-partition").value = p.get("partition");
  $("ex-from").value = p.get("before") ? "sequence" : (p.get("from") || "earliest");
  const from = $("ex-from").value;
  const value = p.get("before") || p.get("value") || "";
  if (from === "time" && value) {
    const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(value) ? value : value + "Z");
    $("ex-time").value = isNaN(ms) ? "" : new Date(ms).toISOString().slice(0, 19);
  } else $("ex-value").value = value;
  const count = p.get("count") || "50";
  if (![...$("ex-count").options].some((o) => o.value === count)) $("ex-count").append(h("option", null, count));
  $("ex-count").value = count;
  if (p.get("q")) $("ex-filter").value = p.get("q");
  showValueField();
}

function showValueField() {
  const from = $("ex-from").value;
  $("ex-value-label").hidden = !["sequence", "offset"].includes(from);
  $("ex-time-label").hidden = from !== "time";
  $("ex-value").placeholder = from === "offset" ? "offset" : "sequence number";
}

function go(params) {
  const hub = ex.hub;
  location.hash = hubHref(hub.namespace, hub.name, "events", params);
}

function formParams(extra) {
  const from = $("ex-from").value;
  const p = { partition: $("ex-partition").value, from, count: $("ex-count").value };
  if (from === "sequence" || from === "offset") p.value = $("ex-value").value.trim();
  if (from === "time") p.value = $("ex-time").value ? $("ex-time").value + "Z" : "";
  return Object.assign(p, extra || {});
}

function eventsUrl(params) {
  const p = paramsOf(params);
  const partition = p.get("partition");
  p.delete("partition"); p.delete("mark");
  const hub = ex.hub;
  return `/api/namespaces/${encodeURIComponent(hub.namespace)}/hubs/${encodeURIComponent(hub.name)}` +
    `/partitions/${encodeURIComponent(partition)}/events?${p}`;
}

async function load(params) {
  stopFollow();
  ex.loading = true;
  $("ex-status").textContent = "Loading…";
  try {
    const r = await api(eventsUrl(params), ex.hub.namespace);
    const body = await r.json();
    if (r.status !== 200) {
      ex.events = []; ex.unreadable = []; ex.page = null;
      $("ex-status").textContent = body.error || `refused (${r.status})`;
      renderEvents();
      return;
    }
    if (paramsOf(params).get("q") && !paramsOf(params).get("before")) await searchOn(params, body);
    ex.events = body.events;
    ex.unreadable = body.unreadable_batches || [];
    ex.page = body;
    ex.params = paramsOf(params);
    renderEvents();
    const mark = ex.params.get("mark");
    if (mark) {
      const row = $("ex-events").querySelector(`tr[data-seq="${CSS.escape(mark)}"]`);
      if (row) row.scrollIntoView({ block: "center" });
    }
    if ($("ex-follow").checked) startFollow();
  } catch (err) {
    $("ex-status").textContent = "The broker did not answer: " + err;
  } finally {
    ex.loading = false;
  }
}

// A search request stops after ~25 ms of the broker's time (docs/console-api.md): go on from
// where it stopped until the page is full, the partition ends, or SEARCH_ROUNDS requests.
async function searchOn(params, body) {
  const key = ex.key;
  const count = Number(paramsOf(params).get("count") || 50);
  for (let round = 0; round < SEARCH_ROUNDS && body.events.length < count
    && body.next_sequence_number <= body.last_sequence_number && ex.key === key; round++) {
    $("ex-status").textContent = `Searching… ${fmtInt(body.scanned)} events looked at`;
    const more = paramsOf(params);
    more.delete("before");
    more.set("from", "sequence"); more.set("value", String(body.next_sequence_number));
    more.set("count", String(count - body.events.length));
    const r = await api(eventsUrl(more), ex.hub.namespace);
    if (r.status !== 200) break;
    const next = await r.json();
    body.events = body.events.concat(next.events);
    body.unreadable_batches = (body.unreadable_batches || []).concat(next.unreadable_batches || []);
    body.scanned += next.scanned;
    body.next_sequence_number = next.next_sequence_number;
    body.last_sequence_number = next.last_sequence_number;
  }
}

// -- follow ------------------------------------------------------------------------------
function startFollow() {
  stopFollow();
  ex.timer = setTimeout(followTick, FOLLOW_MS);
}
function stopFollow() { clearTimeout(ex.timer); ex.timer = null; }

async function followTick() {
  if (!ex.page || $("explorer").hidden || !$("ex-follow").checked) return;
  try {
    const p = new URLSearchParams({ partition: ex.params.get("partition"), from: "sequence",
      value: String(ex.page.next_sequence_number), count: "200" });
    if (ex.params.get("q")) p.set("q", ex.params.get("q"));
    const r = await api(eventsUrl(p), ex.hub.namespace);
    const body = await r.json();
    if (r.status === 200) {
      ex.page.next_sequence_number = body.next_sequence_number;
      ex.page.last_sequence_number = body.last_sequence_number;
      ex.page.first_sequence_number = body.first_sequence_number;
      if (body.events.length || (body.unreadable_batches || []).length) {
        ex.events = ex.events.concat(body.events).slice(-KEEP_ROWS);
        const kept = ex.events.length ? ex.events[0].sequence_number : -1;
        ex.unreadable = ex.unreadable.concat(body.unreadable_batches || [])
          .filter((u) => u.last_sequence_number >= kept).slice(-KEEP_ROWS);
        renderEvents();
        const box = document.querySelector(".ex-events");
        box.scrollTop = box.scrollHeight;
      } else renderStatus();
    }
  } catch (err) { /* the next tick retries */ }
  if ($("ex-follow").checked) ex.timer = setTimeout(followTick, FOLLOW_MS);
}

// -- rendering -----------------------------------------------------------------------------
function visibleEvents() {
  const needle = $("ex-filter").value.trim().toLowerCase();
  if (!needle) return ex.events;
  return ex.events.filter((e) => searchText(e).includes(needle));
}

function searchText(e) {
  const b = e.body;
  const parts = [e.partition_key || "", e.key_hex || "", b.text || b.hex || ""];
  for (const hd of e.headers) parts.push(hd.name, String(hd.value));
  for (const [k, v] of Object.entries(e.properties || {})) parts.push(k, String(v));
  if (b.avro && b.avro.value !== undefined) parts.push(JSON.stringify(b.avro.value));
  return parts.join("\n").toLowerCase();
}

// The oldest and newest sequence numbers the page shows: of its events and of the batches it
// went past because they cannot be read (docs/console-api.md: unreadable_batches).
function pageSpan() {
  const firsts = ex.events.map((e) => e.sequence_number).concat(ex.unreadable.map((u) => u.first_sequence_number));
  const lasts = ex.events.map((e) => e.sequence_number).concat(ex.unreadable.map((u) => u.last_sequence_number));
  return firsts.length ? [Math.min(...firsts), Math.max(...lasts)] : null;
}

function renderStatus() {
  const pg = ex.page;
  if (!pg) return;
  const shown = visibleEvents();
  const span = pageSpan();
  const bad = ex.unreadable.length ? ` (${fmtInt(ex.unreadable.length)} unreadable batch${ex.unreadable.length === 1 ? "" : "es"})` : "";
  const range = span ? `showing ${fmtInt(span[0])}–${fmtInt(span[1])}${bad}` : "no events here";
  const retained = pg.last_sequence_number >= pg.first_sequence_number
    ? `sequence numbers ${fmtInt(pg.first_sequence_number)}–${fmtInt(pg.last_sequence_number)} retained` : "the partition is empty";
  const search = ex.params.get("q") ? ` · ${fmtInt(ex.events.length)} match${ex.events.length === 1 ? "" : "es"} for “${ex.params.get("q")}” in ${fmtInt(pg.scanned)} events looked at` : "";
  const filtered = shown.length !== ex.events.length ? ` · ${fmtInt(shown.length)} of them match the filter` : "";
  const follow = $("ex-follow").checked ? " · following new events" : "";
  $("ex-status").textContent = `Partition ${pg.partition}: ${retained}; ${range}${search}${filtered}${follow}`;
  $("ex-older").disabled = !span || span[0] <= pg.first_sequence_number;
  $("ex-newer").disabled = pg.next_sequence_number > pg.last_sequence_number;
}

// A batch the page went past because it cannot be read: a row at its place, saying why.
function unreadableRow(u) {
  const first = u.first_sequence_number, last = u.last_sequence_number;
  return h("tr", { class: "unreadable", "data-unreadable": `${first}-${last}` },
    h("th", { scope: "row", class: "num" }, first === last ? fmtInt(first) : `${fmtInt(first)}–${fmtInt(last)}`),
    h("td", { colspan: 5 }, h("span", { class: "fmt fmt-unreadable" }, "unreadable"), " ", String(u.error)));
}

function renderEvents() {
  renderStatus();
  const mark = ex.params ? ex.params.get("mark") : null;
  const rows = [];
  const bad = ex.unreadable.slice().sort((a, b) => a.first_sequence_number - b.first_sequence_number);
  let next = 0;  // the next unreadable batch to place: before the first event after it
  for (const e of visibleEvents()) {
    while (next < bad.length && bad[next].last_sequence_number < e.sequence_number) rows.push(unreadableRow(bad[next++]));
    const seq = String(e.sequence_number);
    const open = ex.open.has(seq);
    const toggle = h("button", { type: "button", class: "expand", "aria-expanded": String(open), "data-key": "ev:" + seq,
      "aria-label": `Event ${seq}: ${open ? "hide" : "show"} details`,
      onclick: () => { if (ex.open.has(seq)) ex.open.delete(seq); else ex.open.add(seq); renderEvents(); } }, open ? "▾" : "▸");
    rows.push(h("tr", { "data-seq": seq, class: seq === mark ? "mark" : null },
      h("th", { scope: "row", class: "num" }, toggle, " ", fmtInt(e.sequence_number)),
      h("td", { class: "num mono" }, e.offset),
      h("td", { class: "mono" }, e.enqueued_time.replace("T", " ").replace("Z", "")),
      h("td", { class: "mono pkey" }, e.partition_key !== null ? e.partition_key : e.key_hex ? h("span", { class: "muted" }, "0x" + e.key_hex) : "–"),
      h("td", { class: "num" }, String(headerCount(e) + Object.keys(e.properties || {}).length)),
      h("td", { class: "preview" }, h("span", { class: "fmt fmt-" + bodyFormat(e.body) }, bodyFormat(e.body)), " ", preview(e.body))));
    if (open) rows.push(h("tr", { class: "detail" }, h("td", { colspan: 6 }, detail(e))));
  }
  while (next < bad.length) rows.push(unreadableRow(bad[next++]));
  const cols = ["Seq. no.", "Offset", "Enqueued (UTC)", "Partition key", "Props", "Body"];
  rebuild($("ex-events"), h("thead", null, h("tr", null, cols.map((c, i) => h("th", { scope: "col", class: i === 0 || i === 1 || i === 4 ? "num" : null }, c)))),
    h("tbody", null, rows.length ? rows : h("tr", { class: "empty" }, h("td", { colspan: cols.length },
      ex.events.length ? "No loaded event matches the filter: try Search partition" : "No events at this position"))));
}

// A page shows an event's first headers (docs/console-api.md); headers_count says how many it has.
const headerCount = (e) => (e.headers_count !== undefined ? e.headers_count : e.headers.length);

const bodyFormat = (b) => (b.avro && b.avro.value !== undefined ? "avro" : b.format);

function preview(b) {
  if (b.null) return h("span", { class: "muted" }, "null");
  if (b.avro && b.avro.value !== undefined) return JSON.stringify(b.avro.value).slice(0, 160);
  if (b.format === "binary") return h("span", { class: "mono" }, b.hex.slice(0, 64).replace(/(..)/g, "$1 ").trim() + (b.size > 32 ? " …" : ""));
  let text = b.text;
  if (b.format === "json") { try { text = JSON.stringify(JSON.parse(text)); } catch (e) { /* cut: shown as text */ } }
  return text.length > 160 ? text.slice(0, 160) + "…" : text;
}

function detail(e) {
  const b = e.body;
  const props = [];
  for (const [k, v] of Object.entries(e.properties || {})) props.push([k, "system property", v]);
  for (const hd of e.headers) props.push([hd.name, hd.type, hd.value]);
  const size = `${fmtBytes(b.size)}${b.truncated ? ` · showing the first ${fmtBytes(b.text !== undefined ? new Blob([b.text]).size : b.hex.length / 2)}` : ""}`;
  return h("div", { class: "event" },
    h("div", { class: "event-meta" },
      h("dl", null, ...[["Sequence number", fmtInt(e.sequence_number)], ["Offset", e.offset], ["Enqueued", e.enqueued_time],
        ["Partition key", e.partition_key !== null ? e.partition_key : e.key_hex ? "0x" + e.key_hex : "–"], ["Sent with", e.protocol === "amqp" ? "AMQP or HTTPS" : "Kafka"]]
        .map(([k, v]) => h("div", null, h("dt", null, k), h("dd", null, v)))),
      props.length ? h("table", { class: "props" }, h("thead", null, h("tr", null, h("th", { scope: "col" }, "Property"), h("th", { scope: "col" }, "Type"), h("th", { scope: "col" }, "Value"))),
        h("tbody", null, props.map(([k, t, v]) => h("tr", null, h("th", { scope: "row" }, k), h("td", { class: "muted" }, t), h("td", { class: "mono" }, v === null ? "null" : typeof v === "object" ? JSON.stringify(v) : String(v))))))
        : h("p", { class: "muted" }, "No headers or properties"),
      e.headers_truncated ? h("p", { class: "muted headers-cut" },
        `Showing the first ${fmtInt(e.headers.length)} of ${fmtInt(headerCount(e))} headers (“Event as JSON” has more).`) : null),
    h("div", { class: "event-body" },
      h("div", { class: "body-head" }, h("strong", null, "Body"), " ", h("span", { class: "muted" }, `${bodyFormat(b)} · ${size}`), " ",
        h("button", { type: "button", class: "download", onclick: () => download(e, "body") }, "Download body"),
        h("button", { type: "button", onclick: () => download(e, "event") }, "Event as JSON")),
      b.avro ? avroView(b.avro) : null,
      bodyView(b)));
}

function avroView(a) {
  const what = a.schema_name ? `Avro, schema ${a.schema_group}/${a.schema_name} version ${a.schema_version} (${a.schema_id})` : `Avro, schema ${a.schema_id}`;
  return h("div", { class: "avro" }, h("p", { class: "muted" }, what), a.error ? h("p", { class: "error" }, a.error) : jsonTree(a.value, null, 0));
}

function bodyView(b) {
  if (b.null) return h("p", { class: "muted" }, "The body is null (a Kafka tombstone).");
  if (b.format === "binary") return h("pre", { class: "hex" }, hexDump(b.hex));
  if (b.format === "json" && !b.truncated) {
    try { return h("div", { class: "json" }, jsonTree(JSON.parse(b.text), null, 0)); } catch (e) { /* shown as text */ }
  }
  return h("pre", { class: "text" }, b.text);
}

function hexDump(hex) {
  const lines = [];
  for (let i = 0; i < hex.length; i += 32) {
    const chunk = hex.slice(i, i + 32);
    const bytes = chunk.match(/../g);
    const ascii = bytes.map((x) => { const c = parseInt(x, 16); return c >= 32 && c < 127 ? String.fromCharCode(c) : "."; }).join("");
    lines.push((i / 2).toString(16).padStart(8, "0") + "  " + bytes.join(" ").padEnd(48) + "  " + ascii);
  }
  return lines.join("\n");
}

// JSON as a tree: objects and arrays fold (open to two levels).
function jsonTree(value, name, depth) {
  const label = name === null ? null : h("span", { class: "jk" }, JSON.stringify(name), ": ");
  if (value !== null && typeof value === "object") {
    const isArray = Array.isArray(value);
    const entries = isArray ? value.map((v, i) => [i, v]) : Object.entries(value);
    const sum = isArray ? `[ ${entries.length} item${entries.length === 1 ? "" : "s"} ]` : `{ ${entries.length} key${entries.length === 1 ? "" : "s"} }`;
    if (!entries.length) return h("div", { class: "jl" }, label, isArray ? "[]" : "{}");
    return h("details", { class: "jn", open: depth < 2 }, h("summary", null, label, h("span", { class: "muted" }, sum)),
      h("div", { class: "jc" }, entries.map(([k, v]) => jsonTree(v, isArray ? null : k, depth + 1))));
  }
  const cls = value === null ? "jnull" : typeof value === "string" ? "js" : typeof value === "number" ? "jnum" : "jb";
  return h("div", { class: "jl" }, label, h("span", { class: cls }, JSON.stringify(value)));
}

// The whole body (bytes), or the whole event as the API gives it (JSON, body not cut).
async function download(e, what) {
  const hub = ex.hub;
  const url = `/api/namespaces/${encodeURIComponent(hub.namespace)}/hubs/${encodeURIComponent(hub.name)}` +
    `/partitions/${ex.page.partition}/events/${e.sequence_number}` + (what === "body" ? "/body" : "");
  const r = await api(url, hub.namespace);
  if (r.status !== 200) { $("ex-status").textContent = `Download refused (${r.status})`; return; }
  const blob = await r.blob();
  const name = `${hub.name}-${ex.page.partition}-${e.sequence_number}${what === "body" ? ".bin" : ".json"}`;
  const a = h("a", { href: URL.createObjectURL(blob), download: name });
  document.body.append(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

// -- sending -------------------------------------------------------------------------------
function typedValue(text) {
  if (/^-?\d+$/.test(text) && Math.abs(Number(text)) <= Number.MAX_SAFE_INTEGER) return Number(text);
  if (/^-?\d*\.\d+(e-?\d+)?$/i.test(text)) return Number(text);
  if (text === "true" || text === "false") return text === "true";
  return text;
}

async function send(evt) {
  evt.preventDefault();
  const hub = ex.hub;
  const status = $("send-status");
  const props = {};
  for (const line of $("send-props").value.split("\n")) {
    if (!line.trim()) continue;
    const i = line.indexOf("=");
    if (i < 1) { status.textContent = `“${line}” is not name=value`; status.className = "error"; return; }
    props[line.slice(0, i).trim()] = typedValue(line.slice(i + 1).trim());
  }
  const to = document.querySelector('input[name="send-to"]:checked').value;
  const doc = { body: $("send-body").value, properties: props, content_type: $("send-ctype").value.trim() || null };
  if (to === "partition") doc.partition = Number($("send-partition").value);
  if (to === "key") doc.partition_key = $("send-key").value;
  status.className = ""; status.textContent = "Sending…";
  try {
    const r = await api(`/api/namespaces/${encodeURIComponent(hub.namespace)}/hubs/${encodeURIComponent(hub.name)}/events`,
      hub.namespace, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(doc) });
    const body = await r.json();
    if (r.status !== 201) { status.className = "error"; status.textContent = body.error || `refused (${r.status})`; return; }
    const href = hubHref(hub.namespace, hub.name, "events", { partition: body.partition, from: "sequence",
      value: body.sequence_number, count: $("ex-count").value, mark: body.sequence_number });
    rebuild(status, `Sent to partition ${body.partition} as sequence number ${fmtInt(body.sequence_number)}. `,
      h("a", { href, id: "send-show" }, "Show it"));
    status.className = "ok";
  } catch (err) {
    status.className = "error"; status.textContent = "The broker did not answer: " + err;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("ex-from").addEventListener("change", showValueField);
  $("ex-form").addEventListener("submit", (e) => { e.preventDefault(); go(formParams()); });
  $("ex-filter").addEventListener("input", renderEvents);
  $("ex-search").addEventListener("click", () => {
    const q = $("ex-filter").value.trim();
    if (q) go(formParams({ q })); else $("ex-status").textContent = "Type the text to look for in Filter first.";
  });
  $("ex-older").addEventListener("click", () => {
    const span = pageSpan();
    if (!span) return;
    const p = { partition: ex.page.partition, before: span[0], count: $("ex-count").value };
    if (ex.params.get("q")) p.q = ex.params.get("q");
    go(p);
  });
  $("ex-newer").addEventListener("click", () => {
    if (!ex.page) return;
    const p = { partition: ex.page.partition, from: "sequence", value: ex.page.next_sequence_number, count: $("ex-count").value };
    if (ex.params.get("q")) p.q = ex.params.get("q");
    go(p);
  });
  $("ex-follow").addEventListener("change", () => { if ($("ex-follow").checked) startFollow(); else stopFollow(); renderStatus(); });
  $("send-form").addEventListener("submit", send);
});
