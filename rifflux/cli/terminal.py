"""What the command line shows on a terminal: indexing progress, search results, links
and files.

Both use rich (the progress display falls back to a plain line every few
seconds when stderr is not a terminal).
"""

from __future__ import annotations

import errno
import time
from pathlib import Path

import anyio
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Column
from rich.text import Text

from ..api import Rifflux
from ..types import (
    FINISHED,
    Counts,
    IndexedFile,
    JobInfo,
    LinkPlace,
    NoteLinks,
    ScoreBreakdown,
    SearchExplain,
    SearchResult,
)


class _Stdout(Console):
    """Results on stdout. A reader that has gone (``rifflux search q | head -1``) is a
    ``BrokenPipeError`` for the command line's boundary, which ends quietly with status
    0, rather than rich's exit with status 1."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "stdout was closed")


def stdout_console(*, soft_wrap: bool = True) -> Console:
    """A console for a command's results (stdout)."""
    return _Stdout(highlight=False, soft_wrap=soft_wrap)


class _Rate(ProgressColumn):
    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        unit = task.fields.get("unit", "")
        return Text(f"{speed:,.0f} {unit}/s" if speed else "", style="progress.data.speed")


class ProgressView:
    """Polls the job and the index's ``counts()`` until the job ends: a rich display on a
    terminal, a plain line every few seconds otherwise (both on stderr)."""

    def __init__(self, rf: Rifflux, job_id: str, console: Console) -> None:
        # The total is the job's own count of new and changed files, known once it has
        # compared the folders with the index (no second scan here).
        self._rf, self._job_id, self._console = rf, job_id, console

    async def run(self) -> JobInfo:
        first = await self._rf.counts()
        base_embeddings = int(first["embeddings"])
        if not self._console.is_terminal:
            return await self._plain(base_embeddings)
        columns = (TextColumn("{task.description:<10}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[extra]}"), _Rate(table_column=Column(no_wrap=True)),
                   TimeRemainingColumn())
        with Progress(*columns, console=self._console, transient=False) as bar:
            files = bar.add_task("files", total=None, unit="files", extra="")
            vectors = bar.add_task("embeddings", total=None, unit="chunks", extra="")
            while True:
                job, status = await self._tick()
                done = int(status["embeddings"]) - base_embeddings
                bar.update(files, completed=job["indexed_files"],
                           total=job["planned_files"] or None,
                           extra=f"{status['chunks']:,} chunks · {job['phase']}")
                bar.update(vectors, completed=done, total=done + int(status["pending_embeddings"]))
                if job["status"] in FINISHED:
                    bar.update(files, total=max(job["indexed_files"], 1),
                               completed=max(job["indexed_files"], 1))
                    return job

    async def _plain(self, base_embeddings: int) -> JobInfo:
        started = last = time.monotonic()
        embedding_from: tuple[float, int] | None = None  # when embedding became the phase
        while True:
            job, status = await self._tick()
            now = time.monotonic()
            if job["status"] in FINISHED:
                return job
            files, done = int(job["indexed_files"]), int(status["embeddings"]) - base_embeddings
            pending = int(status["pending_embeddings"])
            if job["phase"] != "indexing" and embedding_from is None:
                embedding_from = (now, done)
            if now - last < 2.0:
                continue
            last = now
            if embedding_from is None:
                rate = files / (now - started)
                speed = f"{rate:.1f} files/s"
                eta = (int(job["planned_files"]) - files) / rate if rate else None
            else:
                rate = (done - embedding_from[1]) / max(now - embedding_from[0], 1e-3)
                speed = f"{rate:.0f} embeddings/s"
                eta = pending / rate if rate else None
            self._console.print(
                f"{job['phase']}: {files}/{job['planned_files']} files, {status['chunks']} chunks, "
                f"{status['embeddings']} embeddings ({pending} pending), {speed}, "
                f"ETA {'?' if eta is None else f'{max(eta, 0):.0f} s'}"
            )

    async def _tick(self) -> tuple[JobInfo, Counts]:
        """Wait up to 0.25 s for the job to end, then read its state."""
        with anyio.move_on_after(0.25):
            await self._rf.wait_for_job(self._job_id)
        return await self._rf.job(self._job_id), await self._rf.counts()


def print_results(console: Console, results: list[SearchResult]) -> None:
    """Each hit: its location (``path:start-end``), breadcrumb and score, then its snippet
    with the matches in colour (and, with explain, why it ranks there)."""
    for n, hit in enumerate(results, 1):
        line = Text(f"{n:>2}. ")
        line.append(_display_path(hit), style="bold cyan")
        if hit.get("heading_path"):
            line.append(f"  {hit['heading_path']}", style="magenta")
        line.append(f"  {_score(hit['score_breakdown'])}", style="dim")
        console.print(line)
        console.print(_marked("    " + hit["snippet"]))
        if "explain" in hit:
            why = ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                            for k, v in hit["explain"].items())
            console.print(Text(f"    why: {why or 'no branch found it'}", style="dim"))


def print_explain(console: Console, explain: SearchExplain) -> None:
    """What the search ran: its FTS5 expressions, the stopwords it left out and the
    filters it applied, one dim line each (the last three when there are any)."""
    lines = [f"lexical query: {explain['fts_query'] or '(no searchable word)'}"]
    if explain["fts_every"]:
        lines.append(f"holding every word first: {explain['fts_every']}")
    if explain["stopwords_dropped"]:
        lines.append(f"stopwords left out: {', '.join(explain['stopwords_dropped'])}")
    if explain["filters"]:
        lines.append("filters: " + "; ".join(f"{name} {_shown_value(value)}"
                                             for name, value in explain["filters"].items()))
    for line in lines:
        console.print(line, style="dim", markup=False)


def _shown_value(value: object) -> str:
    if isinstance(value, list):
        return ", ".join(map(str, value))
    if isinstance(value, dict):
        return ", ".join(f"{k}={_shown_value(v)}" for k, v in value.items())
    return str(value)


def print_links(console: Console, links: NoteLinks) -> None:
    """A note's outgoing links (line, link as written, where it goes), then its
    backlinks (``path:line`` as editors open it, heading, the link)."""
    root = Path(links["root"])
    console.print(Text(_shown(root / links["path"]), style="bold cyan"))
    outgoing, unresolved = links["outgoing"], len(links["unresolved"])
    console.print(f"links to: {len(outgoing)}" + (f" ({unresolved} unresolved)" if unresolved
                                                  else ""), style="bold", markup=False)
    for link in outgoing:
        line = Text(f"  {link['line']:>5}  {_written(link)}  ")
        if link["path"] is None:
            line.append("unresolved", style="red")
        else:
            line.append(link["path"], style="cyan")
        console.print(line)
    console.print(f"linked from: {len(links['backlinks'])}", style="bold", markup=False)
    for back in links["backlinks"]:
        line = Text("  ")
        line.append(f"{_shown(root / back['path'])}:{back['line']}", style="cyan")
        if back["heading"]:
            line.append(f"  {back['heading']}", style="magenta")
        line.append(f"  {_written(back)}")
        console.print(line)


def print_files(console: Console, files: list[IndexedFile]) -> None:
    """Each file: its number of chunks, where it is (as a person opens it), its title."""
    width = max((len(f"{f['chunks']:,}") for f in files), default=0)
    for file in files:
        where = _shown(Path(file["root"]) / file["path"])
        console.print(f"{file['chunks']:>{width},}  {where}  {file['title']}", markup=False)


def _written(link: LinkPlace) -> str:
    """A link as it was written (near enough: a wikilink's shown text is left out)."""
    bang = "!" if link["embed"] else ""
    if link["kind"] == "wikilink":
        return f"{bang}[[{link['target']}]]"
    return f"{bang}[{link['text']}]({link['target']})"


def _marked(snippet: str) -> Text:
    """A snippet with its ``**matches**`` shown in colour instead of between stars."""
    text = Text()
    for i, piece in enumerate(snippet.split("**")):
        text.append(piece, style="bold yellow" if i % 2 else "")
    return text


def _display_path(hit: SearchResult) -> str:
    """The file as a person can open it (relative to the working directory when inside
    it) and the lines the hit came from: ``path:start-end``, which terminals and editors
    open at that line, and ``rifflux show`` prints."""
    full = Path(str(hit.get("root", ""))) / str(hit["path"])
    return f"{_shown(full)}:{hit['line_start']}-{hit['line_end']}"


def _shown(full: Path) -> str:
    """A file as a person opens it: relative to the working directory when inside it."""
    try:
        return full.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(full)


def _score(breakdown: ScoreBreakdown) -> str:
    if "rrf" in breakdown:
        lex, sem = breakdown.get("lexical_rank"), breakdown.get("semantic_rank")
        return (f"rrf {breakdown['rrf']:.4f} (lexical {'#' + str(lex) if lex else '-'}, "
                f"semantic {'#' + str(sem) if sem else '-'})")
    if "bm25" in breakdown:
        return f"bm25 {breakdown['bm25']:.3g}"
    return f"cosine {breakdown.get('cosine', 0.0):.3f}"
