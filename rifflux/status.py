"""The ``index_status`` object of SPEC.md, composed for the facade from what each
component says of itself (``Service.snapshot``) and three reads (the counts, the
processes on the index, the indexed folders); and a job's state and result as the
facade answers them (``job_info``, ``job_result``)."""

from __future__ import annotations

from .actors.jobs import Finished
from .actors.service import Service
from .config import Settings
from .errors import RiffluxError
from .store.common import Recovery
from .types import JobInfo, KindCount, ReindexResult, RootCount, Status

__all__ = ["index_status", "job_info", "job_result", "recovered"]

#: The active model's label and backend (None, None until it has loaded).
Labels = tuple[str | None, str | None]


async def index_status(service: Service, settings: Settings) -> Status:
    if service.check_server is not None:  # (whether the embedding server answers now)
        await service.check_server()
    counts, counted_for = await service.counts()
    process, others = await service.processes()
    snap = service.snapshot()
    caps = service.capabilities
    model = snap["model"]
    roots = await service.root_counts()
    status: Status = {
        "files": counts["files"], "chunks": counts["chunks"],
        "embeddings": counts["embeddings"],
        "pending_embeddings": counts["pending_embeddings"], "roots": counts["roots"],
        "links": counts["links"], "unresolved_links": counts["unresolved_links"],
        "db_path": service.where,
        "embedding_backend": model["backend"],
        "embedding_backend_requested": model["requested"],
        "embedding_model": model["label"],
        "embedding_model_ready": model["ready"],
        "embedding_counts_model": counted_for,
        "embedding_fallback_reason": model["fallback_reason"],
        "embedding_error": model["error"] or snap["indexer"]["adopt_error"],
        "embedding_model_state": "failed" if snap["indexer"]["adopt_error"] else model["state"],
        "embedding_model_reason": snap["indexer"]["adopt_error"] or model["reason"],
        "embedding_dim": model["dim"],
        "embedding_pooling": model["pooling"],
        "embedding_query_prefix": model["query_prefix"],
        "embedding_document_prefix": model["document_prefix"],
        "embedding_max_tokens": model["max_tokens"],
        "embedding_server": model["server"],
        "vectors_in_memory": snap["query"]["vectors_in_memory"],
        "catalog_state": snap["query"]["catalog_state"],
        "include_globs": list(settings.include),
        "exclude_globs": list(settings.exclude),
        "rrf_k": settings.rrf_k,
        "indexed_roots": roots,
        "kinds": by_kind(roots),
        "jobs": snap["jobs"],
        "queued_jobs": snap["queued_jobs"],
        "watcher": snap["watcher"],
        "queues": snap["queues"],
        "embedder": snap["embedder"],
        "process": process,
        "processes": others.processes,
        "sequence": others.sequence,
        "replica": others.replica,
        "replication_lag_s": others.lag_s,
        "store": caps.kind,
        "lexical_ranking": caps.lexical_ranking,
        "store_note": caps.note,
        "lexical_condition": service.condition(),
        "reranker": None if service.reranker is None else service.reranker.snapshot(),
    }
    if service.recovery is not None:
        status["recovered"] = recovered(service.recovery)
    if service.history is not None and service.history.search is not None:
        status["history"] = service.history.snapshot()
    return status


def by_kind(roots: list[RootCount]) -> dict[str, KindCount]:
    """Every root's counts by kind of file, added up (most files first)."""
    out: dict[str, KindCount] = {}
    for root in roots:
        for kind, n in root["kinds"].items():
            total = out.setdefault(kind, {"files": 0, "chunks": 0, "without_text": 0})
            total["files"] += n["files"]
            total["chunks"] += n["chunks"]
            total["without_text"] += n["without_text"]
    return dict(sorted(out.items(), key=lambda kv: (-kv[1]["files"], kv[0])))


def recovered(recovery: Recovery) -> dict[str, object]:
    """``status()["recovered"]``: where the damaged index went, why, when, what it held."""
    return {"moved_to": str(recovery.moved_to), "reason": recovery.reason, "at": recovery.at,
            "roots": [str(r) for r in recovery.roots]}


def job_result(end: Finished, labels: Labels) -> ReindexResult:
    """A completed job's result, with the model it embedded with; else its error."""
    info = end.info
    if end.result is None:
        raise RiffluxError(f"reindex {info['id']} {info['status']}: {info['error']}")
    result: ReindexResult = {**end.result}
    result["embedding_model"], result["embedding_backend"] = labels
    return result


def job_info(end: Finished, labels: Labels) -> JobInfo:
    """An ended job's state; once completed, with its whole result."""
    out = end.info
    if end.result is not None:
        out["result"] = job_result(end, labels)
    return out
