// Rifflux's page, the history: search the commits of the indexed folders' repositories,
// read one whole (its message and its change, as /api/commits keeps it), and from a note's
// hit, the commits that last changed its lines (/api/history/file). Uses app.js's helpers
// ($, api, el, escapeHtml, marked, state, showError); loaded after it.
"use strict";

const HISTORY_FIELDS = { hmode: "mode", hpaths: "paths", hauthor: "author", hsince: "since",
                         hbefore: "before" };
const historyState = { seq: 0, commits: [] };  // (the commits shown, as state.hits)

function historyView() {
  return $("view-history").getAttribute("aria-pressed") === "true";
}

// The notes or the history: which form shows, and what the results and the side say.
function showView(history) {
  $("view-history").setAttribute("aria-pressed", String(history));
  $("view-notes").setAttribute("aria-pressed", String(!history));
  $("search").hidden = history;
  $("history").hidden = !history;
  state.seq++;  // (an answer on its way to the other view is not shown)
  historyState.seq++;
  $("reader").hidden = true;
  $("commit").hidden = true;
  state.hits = [];
  state.selected = -1;
  historyState.commits = [];
  if (history) { searchHistory(); $("hq").focus(); } else { search(); $("q").focus(); }
}

function historyFilters() {
  const out = {};
  for (const [id, key] of Object.entries(HISTORY_FIELDS)) {
    const value = $(id).value.trim();
    if (value && !(key === "mode" && value === "hybrid")) out[key] = value;
  }
  return out;
}

async function searchHistory() {
  const q = $("hq").value.trim();
  state.query = q;  // (app.js's marks: a commit's lines show the query's words)
  const seq = ++historyState.seq;
  const params = new URLSearchParams({ view: "history" });
  if (q) params.set("q", q);
  for (const [key, value] of Object.entries(historyFilters())) params.set(key, value);
  history.replaceState(null, "", "?" + params);
  historyState.commits = [];
  if (!q) {
    $("results").replaceChildren(el("p", "hint", "Search the git history of the indexed " +
      "folders: what changed, when, by whom, and why."));
    return;
  }
  try {
    const answer = await api("/api/history", { query: q, top_k: 30, ...historyFilters() });
    if (seq === historyState.seq) showCommits(answer);
  } catch (error) {
    if (seq === historyState.seq) showError(error.message);
  }
}

function day(iso) {
  return iso ? iso.slice(0, 10) : "";
}

function scoreLine(s) {
  const parts = [`score ${s.score.toFixed(3)}`];
  if (s.lexical_rank) parts.push(`words #${s.lexical_rank}` +
    (s.bm25 !== null ? ` (bm25 ${s.bm25.toFixed(2)})` : ""));
  if (s.semantic_rank) parts.push(`meaning #${s.semantic_rank}` +
    (s.cosine !== null ? ` (cosine ${s.cosine.toFixed(3)})` : ""));
  return parts.join(" · ");
}

function pathLine(p) {
  const how = { added: "A", modified: "M", deleted: "D", renamed: "R", copied: "C" }[p.change]
    || p.change;
  return `${how} ${p.old_path ? p.old_path + " → " : ""}${p.path}` +
    (p.binary ? " (binary)" : ` +${p.added} −${p.removed}`);
}

function showCommits(answer) {
  const results = $("results");
  results.replaceChildren();
  historyState.commits = answer.results;
  state.selected = -1;
  const said = answer.problems || [];
  if (said.length) results.append(el("p", "notice", "⚠ " + escapeHtml(said.join("; "))));
  if (!answer.results.length) {
    results.append(el("p", "empty", "No commit found" +
      (Object.keys(historyFilters()).some((k) => k !== "mode") ? " with these filters." : ".")));
    return;
  }
  answer.results.forEach((hit, i) => {
    const item = el("article", "hit commit-hit");
    item.dataset.index = i;
    item.append(
      el("div", "title", `<span class="hash" title="${escapeHtml(hit.hash)}">` +
        `${escapeHtml(hit.short)}</span>${escapeHtml(hit.title)}`),
      el("div", "who", escapeHtml(`${hit.author} · ${day(hit.date)}`)),
      el("div", "paths", escapeHtml(hit.paths.map(pathLine).join("\n")
        .split("\n").slice(0, 5).join(" · ") +
        (hit.paths_total > 5 ? ` · and ${hit.paths_total - 5} more` : ""))));
    if (hit.match) {
      const where = hit.match.path ? `<span class="file">${escapeHtml(hit.match.path)}` +
        `${hit.match.hunk ? " " + escapeHtml(hit.match.hunk) : ""}</span>\n` : "";
      item.append(el("div", "match", where + marked(hit.match.text)));
    }
    item.append(el("div", "scores", escapeHtml(scoreLine(hit.scores))));
    item.addEventListener("click", () => { select(i); showCommit(hit.short, hit.repo); });
    results.append(item);
  });
  select(0);
}

function openSelectedCommit() {
  const hit = historyState.commits[state.selected];
  if (hit) showCommit(hit.short, hit.repo);
}

// Keyboard first, as the notes' hits: ↑ ↓ move, Enter opens (app.js's Esc and / too).
document.addEventListener("keydown", (event) => {
  if (!historyView() || !historyState.commits.length) return;
  const inForm = event.target.closest && event.target.closest("form");
  if (event.key === "ArrowDown") {
    event.preventDefault();
    if (event.target === $("hq")) $("results").focus();
    select(state.selected + 1);
  } else if (event.key === "ArrowUp") {
    event.preventDefault();
    if (state.selected <= 0) { $("hq").focus(); return; }
    select(state.selected - 1);
  } else if (event.key === "Enter" && state.selected >= 0 && !inForm) {
    event.preventDefault();
    openSelectedCommit();
  }
});

// One commit, whole: its message, the paths it changed and its change as kept.
async function showCommit(commit, repo, { keepList } = {}) {
  $("reader").hidden = true;
  const panel = $("commit");
  panel.hidden = false;
  const body = $("commit-body");
  // (opened from a hit's lines' commits: their list stays above, to open another)
  const shown = keepList ? body.querySelector(".line-history") : null;
  $("commit-head").replaceChildren(el("h2", "", "…"));
  let c;
  try {
    c = await api("/api/commits/" + encodeURIComponent(commit));
  } catch (error) {
    $("commit-head").replaceChildren(el("p", "empty", "⚠ " + escapeHtml(error.message)));
    return;
  }
  $("commit-head").replaceChildren(
    el("h2", "", escapeHtml(c.title)),
    el("div", "where", escapeHtml(`${c.hash}  ·  ${repo || c.repo}`)),
    el("div", "who", escapeHtml(`${c.author} <${c.author_email}> · ${c.date}` +
      (c.committer !== c.author ? ` · committed by ${c.committer}` : ""))));
  const parts = [];
  if (shown) parts.push(shown);
  const message = c.body.trim();
  parts.push(el("div", "body", escapeHtml(message || "(no message beyond its title)")));
  const paths = el("ul", "paths");
  c.paths.forEach((p) => paths.append(el("li", "", escapeHtml(pathLine(p)))));
  parts.push(paths);
  if (c.cut) parts.push(el("p", "notice", "The change was longer: what is shown is the " +
    "summary the index keeps (history_diff_chars). git show " + escapeHtml(c.short) +
    " shows it whole."));
  const change = el("pre", "");
  change.id = "change";
  for (const line of c.change.split("\n")) {
    const kind = line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add"
      : line.startsWith("-") ? "del" : "file";
    const row = el("span", kind, escapeHtml(line) + "\n");
    change.append(row);
  }
  parts.push(change);
  body.replaceChildren(...parts);
}

// The commits that last changed a note hit's lines (git blame of the range).
async function showLineHistory(hit) {
  $("reader").hidden = true;
  $("commit").hidden = false;
  const path = hit.root ? `${hit.root}/${hit.path}` : hit.path;
  const where = `${hit.path}:${hit.line_start}-${hit.line_end}`;
  $("commit-head").replaceChildren(el("h2", "", escapeHtml("History of " + where)));
  $("commit-body").replaceChildren(el("p", "hint", "…"));
  let answer;
  try {
    answer = await api("/api/history/file", { path, start_line: hit.line_start,
                                              end_line: hit.line_end });
  } catch (error) {
    $("commit-body").replaceChildren(el("p", "empty", "⚠ " + escapeHtml(error.message)));
    return;
  }
  const box = el("div", "line-history");
  if (answer.problems.length) box.append(el("p", "notice",
    "⚠ " + escapeHtml(answer.problems.join("; "))));
  const list = el("ul", "");
  answer.commits.forEach((c) => {
    const li = el("li");
    const a = el("a", "", `<span class="hash">${escapeHtml(c.short)}</span> ` +
      escapeHtml(c.title));
    a.href = "#";
    a.addEventListener("click", (event) => {
      event.preventDefault();
      showCommit(c.short, c.repo, { keepList: true });
    });
    const lines = c.lines ? ` · lines ${c.lines.join(", ")}` : "";
    li.append(a, el("span", "ctx", escapeHtml(` ${c.author} · ${day(c.date)}${lines}`)));
    list.append(li);
  });
  if (!answer.commits.length) list.append(el("li", "none",
    "no commit changed these lines (not committed yet?)"));
  box.append(list);
  $("commit-body").replaceChildren(box);
}

// A note's hit on a text file gets a "history" button: its lines' commits.
function addLineHistoryButtons() {
  document.querySelectorAll("#results .hit").forEach((item) => {
    const hit = state.hits[Number(item.dataset.index)];
    if (!hit || item.querySelector(".lines-history") || hit.page || hit.slide ||
        !["markdown", "text", "code"].includes(hit.kind)) return;
    const button = el("button", "lines-history", "history");
    button.type = "button";
    button.title = "the commits that last changed these lines";
    button.addEventListener("click", (event) => {
      event.stopPropagation();
      showLineHistory(hit);
    });
    item.append(button);
  });
}

function initHistory() {
  const params = new URLSearchParams(location.search);
  $("view-notes").addEventListener("click", () => showView(false));
  $("view-history").addEventListener("click", () => showView(true));
  $("history").addEventListener("submit", (event) => {
    event.preventDefault();
    searchHistory().then(() => {
      if (historyState.commits.length) { $("results").focus(); openSelectedCommit(); }
    });
  });
  let typingHistory = null;
  $("hq").addEventListener("input", () => {
    clearTimeout(typingHistory);
    typingHistory = setTimeout(searchHistory, 150);
  });
  for (const id of Object.keys(HISTORY_FIELDS)) $(id).addEventListener("change", searchHistory);
  // the notes' hits get their buttons as they are shown, and those app.js's first search
  // showed before this script ran (an address with ?q= on a busy machine) at once
  new MutationObserver(() => { if (!historyView()) addLineHistoryButtons(); })
    .observe($("results"), { childList: true });
  if (!historyView()) addLineHistoryButtons();
  if (params.get("view") === "history") {
    $("hq").value = params.get("q") || "";
    for (const [id, key] of Object.entries(HISTORY_FIELDS)) {
      $(id).value = params.get(key) || (key === "mode" ? "hybrid" : "");
    }
    showView(true);
  }
}

initHistory();
