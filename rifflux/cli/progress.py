"""``rifflux index``'s progress: a rich display on a terminal, a plain line every few
seconds otherwise (both on stderr)."""

from __future__ import annotations

import time

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
from ..errors import IndexUnreachableError
from ..types import FINISHED, Counts, JobInfo

__all__ = ["ProgressView"]

_NONE: Counts = {"files": 0, "chunks": 0, "embeddings": 0, "pending_embeddings": 0,
                 "roots": 0, "links": 0, "unresolved_links": 0}


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
        self._counts: Counts | None = None  # the last counts read
        self._away = False  # the index's server cannot be reached now (said once)
        self._unanswered = False  # the embedding server does not answer now (said once)

    async def run(self) -> JobInfo:
        first = await self._counted()
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
            self._console.print(plain_line(job, status, speed, eta), markup=False)

    async def _tick(self) -> tuple[JobInfo, Counts]:
        """Wait up to 0.25 s for the job to end, then read its state."""
        with anyio.move_on_after(0.25):
            await self._rf.wait_for_job(self._job_id)
        self._embedding_server()
        return await self._rf.job(self._job_id), await self._counted()

    def _embedding_server(self) -> None:
        """Says once that the embedding server does not answer (the job waits for its
        vectors and goes on by itself), and once that it answers again."""
        server = self._rf.embedding_server()
        if server is None:
            return
        if server["reachable"] is False and not self._unanswered:
            self._console.print(
                f"rifflux: the embedding server {server['error']}; the job waits for its "
                "vectors and goes on by itself once it answers (what is written is kept, "
                "and searchable by its words; Ctrl-C stops here)", markup=False)
            self._unanswered = True
        elif server["reachable"] and self._unanswered:
            self._console.print("rifflux: the embedding server answers again; going on",
                                markup=False)
            self._unanswered = False

    async def _counted(self) -> Counts:
        """The index's counts; while its server (PostgreSQL) cannot be reached, the last
        ones read, and a line that says the job waits for it (the job itself waits,
        bounded, and ends with an error that says so if the server does not come back)."""
        try:
            self._counts = await self._rf.counts()
        except IndexUnreachableError as exc:
            if not self._away:
                self._console.print(f"rifflux: {exc}; the job waits for it and goes on once "
                                    "it is back", markup=False)
            self._away = True
            return self._counts or _NONE
        if self._away:
            self._console.print("rifflux: the index's server is back; going on", markup=False)
        self._away = False
        return self._counts


def plain_line(job: JobInfo, status: Counts, speed: str, eta: float | None) -> str:
    """A progress line where there is no terminal: the job's phase, its files (none
    planned when every file was unchanged: not shown), the index's chunks and vectors."""
    planned = int(job["planned_files"])
    return (f"{job['phase']}: "
            + (f"{int(job['indexed_files']):,}/{planned:,} files, " if planned else "")
            + f"{int(status['chunks']):,} chunks, {int(status['embeddings']):,} embeddings "
            f"({int(status['pending_embeddings']):,} pending), {speed}, "
            f"ETA {'?' if eta is None else f'{max(eta, 0):.0f} s'}")
