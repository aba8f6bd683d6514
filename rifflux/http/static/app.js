// Rifflux's page: search, read a hit in context, follow links, watch jobs run.
// Plain JavaScript against this server's /api (same origin: the token, if any, is a cookie).
"use strict";

const $ = (id) => document.getElementById(id);
const state = { hits: [], selected: -1, query: "", seq: 0, statusTimer: null };

// ------------------------------------------------------------------ talking to the server

async function api(path, params) {
  const url = new URL(path, location.origin);
  for (const [key, value] of Object.entries(params || {})) {
    if (value !== "" && value !== null && value !== undefined) url.searchParams.set(key, value);
  }
  const response = await fetch(url, { headers: { Accept: "application/json" } });
  if (response.status === 401) { location.href = "/login"; throw new Error("token needed"); }
  const body = await response.json();
  if (!response.ok) throw new Error(body.error ? body.error.message : response.statusText);
  return body;
}

// ------------------------------------------------------------------ text helpers

function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;",
                                            '"': "&quot;", "'": "&#39;" })[c]);
}

// The API marks matches **like this**; shown as <mark>, everything else as text.
function marked(snippet) {
  return escapeHtml(snippet).replace(/\*\*(.+?)\*\*/g, "<mark>$1</mark>");
}

// Words too common to mark in a note's lines (the search itself drops them too).
const COMMON = new Set(("a an and are as at be but by for from has have how i if in into is " +
  "it its of on or that the their then there these this to was what when where which who " +
  "why will with you your").split(" "));

function queryWords() {
  const words = state.query.toLowerCase().match(/[\p{L}\p{N}_]{2,}/gu) || [];
  // (a plural marks its singular too: "requests" marks "request")
  return words.filter((w) => !COMMON.has(w)).map((w) => w.length > 4 ? w.replace(/e?s$/, "")
                                                                      : w);
}

// Marks the query's words where a word starts with them (so "review" marks "reviewer",
// never the "for" inside "format"); the text is escaped first.
function withWords(line) {
  const words = queryWords();
  if (!words.length) return escapeHtml(line);
  const pattern = new RegExp("(?<![\\p{L}\\p{N}_])(" + words.map((w) =>
    w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|") + ")[\\p{L}\\p{N}_]*", "giu");
  let html = "";
  let last = 0;
  for (const match of line.matchAll(pattern)) {
    html += escapeHtml(line.slice(last, match.index)) + "<mark>" + escapeHtml(match[0]) +
      "</mark>";
    last = match.index + match[0].length;
  }
  return html + escapeHtml(line.slice(last));
}

function el(tag, className, html) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (html !== undefined) node.innerHTML = html;
  return node;
}

// ------------------------------------------------------------------ searching

function filters() {
  return { mode: $("mode").value, paths: $("paths").value.trim(),
           tags: $("tag").value.trim(), modified_after: $("since").value };
}

async function search() {
  const q = $("q").value.trim();
  state.query = q;
  const seq = ++state.seq;
  const params = new URLSearchParams();
  if (q) params.set("q", q);
  for (const [key, value] of Object.entries(filters())) {
    if (value && !(key === "mode" && value === "hybrid")) params.set(key, value);
  }
  history.replaceState(null, "", params.toString() ? "?" + params : "/");
  if (!q) { showHits(null); return; }
  try {
    const answer = await api("/api/search", { q, top_k: 30, content: "snippet",
                                              snippet_chars: 240, ...filters() });
    if (seq === state.seq) showHits(answer);
  } catch (error) {
    if (seq === state.seq) showError(error.message);
  }
}

function showError(message) {
  const results = $("results");
  results.replaceChildren(el("p", "empty", "⚠ " + escapeHtml(message)));
  state.hits = [];
  state.selected = -1;
}

function showHits(answer) {
  const results = $("results");
  state.hits = answer ? answer.results : [];
  state.selected = -1;
  results.replaceChildren();
  if (!answer) {
    results.append(el("p", "hint", "Type a question or some words. <kbd>/</kbd> search, " +
      "<kbd>↑</kbd> <kbd>↓</kbd> move, <kbd>Enter</kbd> open, <kbd>Esc</kbd> back."));
    return;
  }
  if (!state.hits.length) {
    results.append(el("p", "empty", escapeHtml(answer.hint || "Nothing found.")));
    return;
  }
  // What the answer says of itself (only close in meaning, still embedding, cut) comes
  // first, where it is read before the hits it is about.
  if (answer.hint) results.append(el("p", "notice", "⚠ " + escapeHtml(answer.hint)));
  const root = answer.root;
  state.hits.forEach((hit, i) => {
    const item = el("article", "hit");
    item.dataset.index = i;
    const where = unitOf(hit) ? `${hit.path} · ${unitOf(hit)} ${hit.page || hit.slide}`
      : `${hit.path}:${hit.line_start}` + (hit.line_end !== hit.line_start
        ? `-${hit.line_end}` : "");
    item.append(
      el("div", "title", escapeHtml(hit.title || hit.path)),
      el("div", "where", escapeHtml(where)),
      el("div", "crumb", escapeHtml(hit.heading_path || "")),
      el("div", "snippet", marked(hit.snippet || "")));
    if (hit.tags && hit.tags.length) item.append(el("div", "tags",
      escapeHtml(hit.tags.map((t) => "#" + t).join(" "))));
    if (!hit.root && root) hit.root = root;
    item.addEventListener("click", () => { select(i); open(i); });
    results.append(item);
  });
  select(0);
}

function select(i) {
  const items = document.querySelectorAll(".hit");
  if (!items.length) return;
  state.selected = Math.max(0, Math.min(i, items.length - 1));
  items.forEach((node, n) => node.classList.toggle("selected", n === state.selected));
  items[state.selected].scrollIntoView({ block: "nearest" });
}

// ------------------------------------------------------------------ reading a hit

// A PDF's hit is on a page, a deck's on a slide: "page", "slide", or "" (lines).
function unitOf(hit) {
  return hit.page ? "page" : hit.slide ? "slide" : "";
}

async function open(i) {
  const hit = state.hits[i];
  if (hit) await showNote(hit.path, hit.root, hit.line_start, hit.line_end, hit.heading_path,
                          hit.title, hit.page || hit.slide, unitOf(hit));
}

// The file itself, as the server serves an indexed file: a PDF opens at the page.
function rawLink(path, root, page, unit) {
  const url = new URL("/api/raw", location.origin);
  url.searchParams.set("path", path);
  if (root) url.searchParams.set("root", root);
  const a = el("a", "open-file", escapeHtml(unit === "page" ? `open the PDF at page ${page}`
    : `open the file (${unit} ${page})`));
  a.href = url.pathname + url.search + (unit === "page" ? `#page=${page}` : "");
  a.target = "_blank";
  a.rel = "noopener";
  return a;
}

async function showNote(path, root, lineStart, lineEnd, crumb, title, page, unit) {
  const reader = $("reader");
  reader.hidden = false;
  const from = Math.max(1, lineStart - 8);
  const to = lineEnd + 12;
  const where = page ? `${root ? root + "/" : ""}${path} · ${unit} ${page}`
    : `${root ? root + "/" : ""}${path}:${lineStart}-${lineEnd}`;
  const head = [el("h2", "", escapeHtml(title || path)),
    el("div", "where", escapeHtml(where + (crumb ? "  ·  " + crumb : "")))];
  if (page) head.push(rawLink(path, root, page, unit));
  $("note-head").replaceChildren(...head);
  $("lines").textContent = "…";
  const [lines, links, near] = await Promise.allSettled([
    page ? api("/api/file", { path, root, page })  // the whole page, the hit marked in it
      : api("/api/file", { path, root, start_line: from, end_line: to }),
    api("/api/links", { path, root }),
    api("/api/neighbors", { path, root, depth: 1 })]);
  if (lines.status === "fulfilled") {
    const pre = $("lines");
    pre.replaceChildren();
    lines.value.text.split("\n").forEach((text, k) => {
      const n = lines.value.start_line + k;
      const row = el("span", "ln" + (n >= lineStart && n <= lineEnd ? " in" : ""));
      row.innerHTML = `<span class="n">${n}</span><span class="t">${withWords(text)}</span>`;
      pre.append(row);
    });
    const first = pre.querySelector(".in");
    if (first) first.scrollIntoView({ block: "nearest" });
  } else {
    $("lines").textContent = lines.reason.message;
  }
  fill("backlinks", links.status === "fulfilled" ? links.value.backlinks : [], (b) =>
    noteLink(b.path, root, b.line, `${b.path}:${b.line}`, b.context), "no note links here");
  fill("neighbors", near.status === "fulfilled" ? near.value : [], (n) =>
    noteLink(n.path, root, 1, n.title || n.path, n.path), "no linked notes");
}

function fill(id, items, make, none) {
  const list = $(id);
  list.replaceChildren();
  if (!items.length) { list.append(el("li", "none", none)); return; }
  items.slice(0, 50).forEach((item) => list.append(make(item)));
}

function noteLink(path, root, line, label, context) {
  const li = el("li");
  const a = el("a", "", escapeHtml(label));
  a.href = "#";
  a.addEventListener("click", (event) => {
    event.preventDefault();
    showNote(path, root, line, line, "", path);
  });
  li.append(a);
  if (context) {
    const shown = context.length > 160 ? context.slice(0, 157) + "…" : context;
    li.append(el("span", "ctx", escapeHtml(shown)));
  }
  return li;
}

// ------------------------------------------------------------------ status and progress

async function refreshStatus() {
  try {
    const s = await api("/api/status");
    const parts = [`${s.files.toLocaleString()} files`, `${s.chunks.toLocaleString()} chunks`,
                   `${s.roots} folder${s.roots === 1 ? "" : "s"}`,
                   s.embedding_model || "no model yet"];
    let html = escapeHtml(parts.join(" · "));
    if (s.pending_embeddings) html += ` · <span class="warn">${s.pending_embeddings
      .toLocaleString()} to embed</span>`;
    $("status").innerHTML = html;
  } catch (error) {
    $("status").textContent = error.message;
  }
}

function statusSoon() {  // at most one refresh a second while commits stream in
  if (state.statusTimer) return;
  state.statusTimer = setTimeout(() => { state.statusTimer = null; refreshStatus(); }, 1000);
}

const running = new Map();  // job id -> its latest snapshot

function showProgress() {
  const bar = $("progress");
  const active = [...running.values()];
  if (!active.length) { bar.hidden = true; return; }
  const job = active[active.length - 1];
  let percent = 0;
  let text;
  if (job.phase === "embedding") {
    const left = job.pending_embeddings;
    const total = Math.max(left, job.embedded_total || left);
    job.embedded_total = total;
    percent = total ? Math.round(100 * (total - left) / total) : 99;
    text = `embedding: ${left.toLocaleString()} chunks to go`;
  } else if (job.status === "queued") {
    text = "queued";
  } else {
    const planned = Math.max(job.planned_files, job.indexed_files);
    percent = planned ? Math.round(100 * job.indexed_files / planned) : 0;
    text = `indexing ${job.paths.join(", ")}: ${job.indexed_files.toLocaleString()}` +
      (planned ? ` of ${planned.toLocaleString()} files` : " files");
  }
  bar.hidden = false;
  bar.setAttribute("aria-valuenow", String(percent));
  $("progress-bar").style.width = percent + "%";
  $("progress-text").textContent = text + (active.length > 1 ? ` (+${active.length - 1})` : "");
}

function jobChanged(job) {
  if (["completed", "failed", "cancelled"].includes(job.status)) {
    running.delete(job.id);
    refreshStatus();
  } else {
    const before = running.get(job.id);
    if (before && before.embedded_total) job.embedded_total = before.embedded_total;
    running.set(job.id, job);
  }
  showProgress();
}

function follow() {
  const events = new EventSource("/api/events");
  events.addEventListener("hello", (e) => {
    running.clear();
    JSON.parse(e.data).jobs.forEach(jobChanged);
    showProgress();
  });
  events.addEventListener("job", (e) => jobChanged(JSON.parse(e.data)));
  events.addEventListener("index", statusSoon);
  events.addEventListener("lost", refreshStatus);
}

async function loadTags() {
  try {
    const tags = await api("/api/tags");
    $("tag-list").replaceChildren(...tags.slice(0, 200).map((t) => {
      const option = document.createElement("option");
      option.value = t.tag;
      option.label = `${t.tag} (${t.files})`;
      return option;
    }));
  } catch (error) { /* the tag box still takes any tag */ }
}

// ------------------------------------------------------------------ keyboard first

let typing = null;
function searchSoon() {
  clearTimeout(typing);
  typing = setTimeout(search, 150);
}

document.addEventListener("keydown", (event) => {
  const inForm = event.target.closest && event.target.closest("form");
  if (event.key === "/" && !inForm) {
    event.preventDefault();
    const box = historyView() ? $("hq") : $("q");  // (history.js)
    box.focus();
    box.select();
  } else if (event.key === "ArrowDown" && state.hits.length) {
    event.preventDefault();
    if (event.target === $("q")) $("results").focus();
    select(state.selected + 1);
  } else if (event.key === "ArrowUp" && state.hits.length) {
    event.preventDefault();
    if (state.selected <= 0) { $("q").focus(); return; }
    select(state.selected - 1);
  } else if (event.key === "Enter" && state.selected >= 0 && event.target !== $("q")
             && !inForm) {
    event.preventDefault();
    open(state.selected);
  } else if (event.key === "Escape") {
    const side = ["reader", "commit"].map($).find((panel) => !panel.hidden);
    if (side) { side.hidden = true; $("results").focus(); }
    else (historyView() ? $("hq") : $("q")).focus();  // (history.js)
  }
});

function init() {
  const params = new URLSearchParams(location.search);
  $("q").value = params.get("view") === "history" ? "" : params.get("q") || "";
  $("mode").value = params.get("mode") || "hybrid";
  $("paths").value = params.get("paths") || "";
  $("tag").value = params.get("tags") || "";
  $("since").value = params.get("modified_after") || "";
  $("search").addEventListener("submit", (event) => {
    event.preventDefault();
    clearTimeout(typing);
    search().then(() => { if (state.hits.length) { $("results").focus(); open(0); } });
  });
  $("q").addEventListener("input", searchSoon);
  for (const id of ["mode", "paths", "tag", "since"]) $(id).addEventListener("change", search);
  refreshStatus();
  loadTags();
  follow();
  if (params.get("view") === "history") return;  // (history.js searches the commits)
  if ($("q").value) search(); else $("q").focus();
}

init();
