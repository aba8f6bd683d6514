"""The shapes Rifflux returns, as ``TypedDict``s: search results, chunks, files, jobs, status.

SPEC.md is the contract; these types are how mypy holds the library, the MCP server and the
command line to it. Extra fields may be added; the ones SPEC names never change meaning.
"""

from __future__ import annotations

from typing import Literal, NotRequired, final

# typing_extensions' TypedDict: pydantic on 3.11 reads only it (OpenAPI comes from these).
from typing_extensions import TypedDict

from .history_types import HistoryStatus
from .limits import CONTENT_MODES as CONTENT_MODES
from .limits import DUPLICATES as DUPLICATES
from .limits import MODES as MODES
from .limits import ContentMode as ContentMode
from .limits import Duplicates as Duplicates
from .limits import Mode as Mode

JobStatus = Literal["queued", "running", "retry_wait", "completed", "failed", "cancelled"]
JobSource = Literal["api", "watcher", "startup", "auto", "note"]
#: Where the embedding model is: ``not_loaded`` (until needed), ``loading``, ``ready``,
#: ``fallback`` (``auto`` could not load it: hash vectors) or ``failed`` (no semantic search).
ModelState = Literal["not_loaded", "loading", "ready", "fallback", "failed"]
#: The statuses a job ends in.
FINISHED: tuple[JobStatus, ...] = ("completed", "failed", "cancelled")


@final
class LexicalScores(TypedDict):
    bm25: float
    #: (added) a reranker's score, on the hits it rescored (the first ``rerank_depth``).
    rerank: NotRequired[float]


@final
class SemanticScores(TypedDict):
    cosine: float
    rerank: NotRequired[float]


@final
class HybridScores(TypedDict):
    rrf: float  # Reciprocal Rank Fusion of the two ranks (k=60)
    lexical_rank: int | None
    semantic_rank: int | None
    #: The hybrid score hits are ordered by: (bm25 / best bm25 + cosine / best cosine) / 2.
    fused: float
    #: (added) a reranker's score, on the hits it rescored: they come first, by it.
    rerank: NotRequired[float]


#: Final, so that ``"rrf" in breakdown`` tells mypy which one it is.
ScoreBreakdown = LexicalScores | SemanticScores | HybridScores


class ChunkRecord(TypedDict):
    """A stored chunk: SPEC's fields, then where it is and what note it belongs to."""

    chunk_id: str
    path: str  # relative to ``root``
    heading_path: str
    chunk_index: int
    content: str
    root: str
    title: str  # front-matter title, else the first H1, else the file name
    tags: list[str]  # as filters see them: front matter and inline, nested levels included
    modified: str  # the file's mtime, ISO 8601 UTC
    line_start: int  # 1-based, inclusive: the source lines the text came from
    line_end: int
    #: (added) what kind of file: markdown, text, pdf, pptx, docx, code (core.extract)
    kind: str
    page: NotRequired[int]  # (added) a PDF's page the text is on, 1-based
    slide: NotRequired[int]  # (added) a deck's slide the text is on, 1-based
    #: (added) the language of the text (ISO 639-1, core.language); absent when it
    #: cannot be told (too few letters), or while it waits to be told (just after indexing)
    lang: NotRequired[str]


class ChunkDetail(ChunkRecord):
    """``get_chunk``: a chunk and its neighbours in the file."""

    prev_chunk_id: str | None
    next_chunk_id: str | None


class HitExplain(TypedDict, total=False):
    """Why a hit ranks where it does: whichever branch found it."""

    lexical_rank: int
    bm25: float
    semantic_rank: int
    cosine: float
    #: (added) moved first as a definition of the name the query is (core.definitions)
    definition: bool
    #: (added) a reranked hit's place in the list before reranking (1-based).
    fused_rank: int


class AlsoIn(TypedDict):
    """Another place of a hit's text: a chunk holding the same heading breadcrumb and text."""

    path: str
    root: str
    line_start: int


class SearchResult(TypedDict):
    """A search hit: SPEC's fields (``content`` unless ``content="snippet"``), where it
    is, what note it belongs to, its snippet, and on request why it ranks there."""

    chunk_id: str
    path: str
    heading_path: str
    chunk_index: int
    content: NotRequired[str]
    root: str
    title: str
    tags: list[str]
    modified: str
    line_start: int
    line_end: int
    kind: str  # (added) markdown, text, pdf, pptx, docx, code
    page: NotRequired[int]  # (added) the PDF page the hit is on
    slide: NotRequired[int]  # (added) the deck's slide the hit is on
    lang: NotRequired[str]  # (added) the language of the hit's text (ISO 639-1), when known
    score_breakdown: ScoreBreakdown
    snippet: str  # ~240 characters around the query's terms, matches marked **...**
    explain: NotRequired[HitExplain]
    #: How many other notes link to this hit's note (once the catalog has loaded).
    backlink_count: NotRequired[int]
    #: The other chunks holding the same text, within the search's filters (the first
    #: 100 in path order) and how many there are: a text is given once (the copy ranked
    #: best; of equal ones, the first by path, chunk index, root), unless duplicates="all".
    also_in: NotRequired[list[AlsoIn]]
    also_in_count: NotRequired[int]


#: Which store holds an index: an SQLite file, or a PostgreSQL database.
StoreKind = Literal["sqlite", "postgresql"]
#: How its lexical branch ranks: FTS5's bm25 (SQLite), BM25 in PostgreSQL (pg_textsearch),
#: or PostgreSQL's own ts_rank_cd (without pg_textsearch).
LexicalRanking = Literal["fts5", "bm25", "ts_rank_cd"]


class LexicalExplain(TypedDict):
    """The query the store's lexical branch runs (as the store itself is given it)."""

    store: StoreKind
    ranking: LexicalRanking
    match: str  # what a chunk must match: FTS5's MATCH expression, or a tsquery (PostgreSQL)
    every: str | None  # the same, for the chunks holding every word (they rank first)
    ranked_by: str | None  # the tokens BM25 ranks by, where the store is given them apart


class BranchTexts(TypedDict):
    lexical: str | None  # None: a semantic search runs no lexical branch
    semantic: str | None  # None: a lexical search runs no semantic branch
    hypothesis: bool  # the semantic text was made from a hypothesis


class RerankExplain(TypedDict):
    by: str  # a rerank server's URL, or a cross-encoder's directory
    depth: int  # how many of the first hits it rescores


class SearchExplain(TypedDict):
    fts_query: str | None  # the lexical branch's FTS5 expression (None: no searchable word)
    fts_every: str | None  # what chunks holding every word of a mixed CJK query match
    stopwords_dropped: list[str]  # as written in the query, once each
    filters: dict[str, object]  # as applied
    #: What the store's lexical branch runs (None: no searchable word).
    lexical: NotRequired[LexicalExplain | None]
    #: (added) the text each branch searched with: the query's words (lexical), and what
    #: the semantic branch embedded (the query, or a hypothesis with it).
    texts: NotRequired[BranchTexts]
    #: (added) the reranker asked to rescore the first hits, when one was.
    rerank: NotRequired[RerankExplain]


class SearchAnswer(TypedDict):
    """``search_rifflux``'s output (and ``rifflux search --json``)."""

    query: str
    mode: Mode
    count: int
    embedding_model: str | None
    results: list[SearchResult]
    auto_reindex: NotRequired[dict[str, object]]
    #: Texts still without a vector: semantic results cover only part of the index.
    pending_embeddings: NotRequired[int]
    #: Chunks whose language is not told yet (it is, just after their files are
    #: indexed): a ``lang`` filter leaves them out, and hybrid ranking prefers the
    #: question's language without them, until then. Only where either applies.
    languages_pending: NotRequired[int]
    hint: NotRequired[str]  # an empty or cut answer says what to do
    root: NotRequired[str]  # content='snippet': the root every hit shares
    truncated: NotRequired[bool]
    #: Results left out to fit max_chars (the lowest-ranked): ``count`` is of those given.
    omitted: NotRequired[int]
    explain: NotRequired[SearchExplain]


@final
class FileRecord(TypedDict):
    """A stored file and its chunks in order, as ``get_file`` returns it."""

    path: str
    root: str
    title: str
    tags: list[str]
    aliases: list[str]
    frontmatter: dict[str, object]
    encoding: str  # what the file was read as: utf-8, utf-16-le, cp1252, ...
    sha256: str
    size: int
    total_lines: int
    modified: str
    chunks: list[ChunkRecord]
    other_roots: NotRequired[list[str]]  # other roots with a file at the same relative path


@final
class FileLines(TypedDict):
    """``get_file`` with a line range: the lines as they are on disk now."""

    path: str
    root: str
    start_line: int  # a start before line 1 is clamped to 1
    end_line: int  # clamped to the file's end
    total_lines: int  # as str.splitlines() counts them
    text: str
    other_roots: NotRequired[list[str]]
    #: The file is not what was indexed: hits' line numbers may point elsewhere now.
    changed_since_indexed: NotRequired[bool]
    #: (added) A file whose locations are pages or slides (a PDF, a deck): which; its
    #: lines are those of its text as indexed, its pages one after another.
    unit: NotRequired[str]
    start_page: NotRequired[int]  # (added) read by pages (slides): the range read ...
    end_page: NotRequired[int]
    total_pages: NotRequired[int]  # ... of how many
    sha256: NotRequired[str]  # of the file's bytes as read now (a note's if_match)


LinkKind = Literal["wikilink", "markdown"]


class LinkPlace(TypedDict):
    """Where a link is written, and what it says."""

    heading: str  # the heading breadcrumb of the linking note there ("" before any heading)
    line: int  # 1-based line of the linking note
    text: str  # what a reader sees: the shown text, else the target
    target: str  # as written: "Note#Heading", "../dir/Note.md#anchor"
    kind: LinkKind
    embed: bool  # ![[...]] or ![...](...)
    anchor: str | None  # the heading ("A#B": B under A) or ^block id linked to, if any
    chunk_id: str | None  # the linking note's chunk the link is in
    context: str  # the line the link is on (at most 200 characters around it)


class OutgoingLink(LinkPlace):
    """A link a note makes: where it is in the note, and where it goes."""

    path: str | None  # the file it resolves to (in the same root); None: unresolved
    target_chunk_id: str | None  # the linked note's chunk of the anchor (None: none, not found)


class Backlink(LinkPlace):
    """A link to a note, where the linking note has it."""

    path: str  # the linking note


class NoteLinks(TypedDict):
    """``links(path)``: a note's links both ways, and those of its own that resolve to no file."""

    path: str
    root: str
    outgoing: list[OutgoingLink]  # in the note's order
    backlinks: list[Backlink]  # by linking file, then line
    unresolved: list[OutgoingLink]  # the outgoing links whose path is None


class Neighbor(TypedDict):
    """``neighbors(path)``: a note within ``depth`` links, either way."""

    path: str
    title: str
    distance: int  # links away: 1 for a note linked to or from this one
    root: str  # (added) the indexed folder ``path`` is in: the note's own


class TagCount(TypedDict):
    tag: str
    files: int


class Problem(TypedDict):
    """A location or file that could not be indexed (what was indexed of it is kept)."""

    path: str
    error: str


class FileWarning(TypedDict):
    """A file indexed with something replaced or guessed, or skipped as not markdown
    text (binary, too large, not a regular file)."""

    path: str
    reason: str


class LeftOut(TypedDict):
    files: int
    reason: str  # e.g. "under node_modules/, excluded by default (node_modules)"


class ReindexResult(TypedDict):
    indexed_files: int
    skipped_files: int
    removed_files: int
    errors: list[Problem]
    warnings: list[FileWarning]
    left_out: NotRequired[list[LeftOut]]  # with count_left_out
    #: The files indexed and removed, by their path in their folder (the first 50 of each).
    changed: NotRequired[dict[str, list[str]]]
    indexed_paths: NotRequired[list[str]]
    # added by the library once the job is complete
    embedding_model: NotRequired[str | None]
    embedding_backend: NotRequired[str | None]
    job_id: NotRequired[str]
    embedded_chunks: NotRequired[int]


class ForgetResult(TypedDict):
    """What ``forget`` removed from the index (the files on disk are untouched)."""

    path: str
    removed_files: int
    removed_roots: list[str]  # the indexed folders that are gone (all of them, not a part)
    removed_paths: list[str]  # the files removed, by their path in their folder (first 50)
    job_id: str


class JobInfo(TypedDict):
    id: str
    status: JobStatus
    phase: str
    source: JobSource
    paths: list[str]
    force: bool
    attempts: int
    created_at: float
    started_at: float | None
    finished_at: float | None
    planned_files: int
    indexed_files: int
    pending_embeddings: int
    error: str | None
    result: ReindexResult | None


class BackgroundReindex(TypedDict):
    """``reindex(background=True)``: the job, at once."""

    job: JobInfo
    embedding_model: str | None
    embedding_backend: str | None


class WatcherStatus(TypedDict):
    running: bool
    paths: list[str]
    events_seen: int
    batches: int
    restarts: int
    last_error: str | None
    pending_paths: int


class QueueStatus(TypedDict):
    buffered: int
    max_buffer: int
    waiting_senders: int


class EmbedderStatus(TypedDict):
    texts_embedded: int
    busy: bool
    failures: int
    #: (added) Why embedding waits, when it does: the embedding server does not answer
    #: (it is asked again by itself, after a backoff: ``retry_in`` seconds). None: it
    #: does not wait.
    waiting: str | None
    retry_in: float | None


class EmbeddingServerStatus(TypedDict):
    """(added) The embedding server that makes the index's vectors (``--embed-url``)."""

    url: str  # without a user name or password; the key is never shown
    model: str | None  # the server's model (None until it has answered)
    dim: int | None
    #: Whether it answered the last request (None: not asked yet), what went wrong, and
    #: since when (Unix time) it has not answered.
    reachable: bool | None
    error: str | None
    unreachable_since: float | None
    batch_size: int  # texts a request (smaller once the server said one was too large)
    concurrency: int  # requests in flight at most


class Counts(TypedDict):
    files: int
    chunks: int
    embeddings: int
    pending_embeddings: int
    roots: int
    links: int  # links between notes, as written (embeds included)
    unresolved_links: int  # of which no file is found for


class IndexedFile(TypedDict):
    """A file the index holds, as ``files()`` lists it (``modified``: ISO 8601 UTC)."""

    path: str  # relative to ``root``
    root: str
    title: str
    modified: str
    chunks: int
    kind: str  # (added) markdown, text, pdf, pptx, docx, code


class KindCount(TypedDict):
    """How many files of one kind, their chunks, and how many of them hold no text (a
    PDF without a text layer: a scan)."""

    files: int
    chunks: int
    without_text: int


class RootCount(TypedDict):
    """An indexed folder and what the index holds from it."""

    path: str
    files: int
    chunks: int
    kinds: dict[str, KindCount]  # (added) by kind of file


class ProcessInfo(TypedDict):
    """A process with the index open: its pid, its roles (``indexer``: it writes;
    ``embedder``: it holds the embedding lease; ``watcher``: it watches folders;
    ``reader``: opened read-only), and when it was last seen (Unix time)."""

    pid: int
    roles: list[str]
    last_seen: float


class ThisProcess(TypedDict):
    pid: int
    roles: list[str]


class RerankStatus(TypedDict):
    """The reranker searches may ask for (``Settings.rerank_url`` or ``rerank_model``)."""

    by: str  # the rerank server's URL, or the cross-encoder's directory
    api: Literal["jina", "tei", "onnx"]  # how it is asked: a server's API, or the model
    default: bool  # every search reranks unless it says otherwise (``Settings.rerank``)
    depth: int  # how many of the first hits it rescores
    timeout: float  # seconds, after which a search keeps its fused order
    reranked: int  # searches it reranked since the start
    failures: int  # searches that kept their fused order because it failed
    last_failure: str | None  # why it last failed


class Status(Counts):
    """``status()`` and the MCP ``index_status`` tool."""

    db_path: str
    embedding_backend: str | None
    embedding_backend_requested: str
    embedding_model: str | None
    embedding_model_ready: bool
    #: The model ``embeddings`` and ``pending_embeddings`` were counted for: the active
    #: one, or while it loads, the one the index was last embedded with.
    embedding_counts_model: str | None
    embedding_fallback_reason: str | None
    embedding_error: str | None
    #: (added) Where the model is (``ModelState``) and why, in words: what loads and for
    #: how long so far, what searches do meanwhile, or what went wrong (None when ready).
    embedding_model_state: ModelState
    embedding_model_reason: str | None
    #: How the model runs: its vectors' dimension (the hash backend's too), pooling
    #: (``mean`` or ``cls``), the prefixes put before queries and documents ("" for none)
    #: and the tokens a text is cut to. None where it does not apply (hashing, no model).
    embedding_dim: int | None
    embedding_pooling: str | None
    embedding_query_prefix: str | None
    embedding_document_prefix: str | None
    embedding_max_tokens: int | None
    #: (added) The embedding server making the vectors (``--embed-url``), whether it
    #: answers now and why not; None: the vectors are made here (the local model).
    embedding_server: EmbeddingServerStatus | None
    vectors_in_memory: int
    catalog_state: Literal["loading", "ready"]  # (added) the catalog that filters use
    include_globs: list[str]
    exclude_globs: list[str]
    rrf_k: int
    indexed_roots: list[RootCount]  # with file and chunk counts (``roots`` counts them)
    kinds: dict[str, KindCount]  # (added) files and chunks by kind of file, every root's
    jobs: list[JobInfo]
    queued_jobs: int
    watcher: WatcherStatus
    queues: dict[str, QueueStatus]
    embedder: EmbedderStatus
    #: The index was damaged and rebuilt at this open: where the old file went, and why.
    recovered: NotRequired[dict[str, object]]
    #: (added) The git history's reading and embedding, when the history is kept.
    history: NotRequired[HistoryStatus]
    #: This process, the others with the index open (seen in the last minute), and the
    #: index's change sequence number (every process's writes advance it).
    process: ThisProcess
    processes: list[ProcessInfo]
    sequence: int
    store: StoreKind  # (added) the store (docs/CONTRACT.md)
    lexical_ranking: LexicalRanking  # how its lexical branch ranks: fts5, bm25 or ts_rank_cd
    store_note: str | None  # what to know of its ranking (None: nothing)
    #: (added) how its lexical branch ranks now, when there is something to say (PostgreSQL
    #: without its BM25 index: the same answers, slower); None: nothing
    lexical_condition: str | None
    #: (added) whether the index is read on a streaming replica (PostgreSQL), and how far
    #: behind the primary: seconds since the last transaction it replayed was committed
    #: there (it grows while the primary writes nothing); None on a primary or SQLite, and
    #: on a replica that has replayed no transaction yet
    replica: bool
    replication_lag_s: float | None
    #: (added) the configured reranker and how it has done; None: none is configured
    reranker: RerankStatus | None
