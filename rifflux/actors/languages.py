"""The languages pass: the languages of committed chunks (``core.language``), told after
their files are written, off the path to a lexically searchable file (as vectors are).

The indexer runs it after each job's writes, and at start for what is still untold (a
pass cut short, another process's, an index upgraded from before languages): the
waiting files are read from the store in batches (``TellingStore``), their chunks'
languages found in the parse workers (spread over them; a few chunks in a thread), and
written back, each batch one transaction whose catalog entries the caller hands on.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

import anyio

from ..errors import RiffluxError
from ..store.protocols import TellingStore
from ..store.written import Written
from .parse_pool import ParsePool

logger = logging.getLogger(__name__)

#: Chunks read per batch, and told in one transaction.
_BATCH = 2048
#: Fewer chunks than this are told in a thread (waking a worker costs more), and fewer
#: than ``_SPAWN`` too while no worker runs (a job small enough to be parsed in threads:
#: starting workers, each loading Python and the model, would cost more than telling
#: 0.1 ms a chunk here).
_IN_THREAD = 64
_SPAWN = 2048


async def tell_languages(telling: TellingStore, pool: ParsePool,
                         on_commit: Callable[[Written], Awaitable[None]]) -> int:
    """Tell every waiting chunk its language; the number of files told. A batch that
    tells nothing (its files rewritten meanwhile by another process) ends the pass: the
    next one reads them again."""
    told = 0
    while untold := await telling.untold(_BATCH):
        texts = [(heading, content) for u in untold for _, heading, content in u.chunks]
        found = iter(await _detect(pool, texts))
        written = await telling.tell([(u, [next(found) for _ in u.chunks]) for u in untold])
        if not written.files:
            break
        told += len(written.files)
        await on_commit(written)
    return told


async def _detect(pool: ParsePool, texts: list[tuple[str, str]]) -> list[str | None]:
    """``chunk_languages`` of ``texts``, in parts side by side on the pool's workers."""
    from ..core.language import chunk_languages

    if len(texts) < _IN_THREAD or (len(texts) < _SPAWN and not pool.started):
        return await anyio.to_thread.run_sync(chunk_languages, texts)
    size = -(-len(texts) // pool.size)
    parts = [texts[i : i + size] for i in range(0, len(texts), size)]
    out: list[Sequence[str | None]] = [[] for _ in parts]

    async def one(i: int) -> None:
        try:
            out[i] = await pool.languages(parts[i])
        except RiffluxError:  # a worker died: this part in a thread instead
            logger.exception("language worker failed; telling %d chunks here", len(parts[i]))
            out[i] = await anyio.to_thread.run_sync(chunk_languages, parts[i])

    async with anyio.create_task_group() as tg:
        for i in range(len(parts)):
            tg.start_soon(one, i, name="rifflux.indexer.languages")
    return [lang for part in out for lang in part]
