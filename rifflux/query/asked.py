"""What a search is asked, checked once for every caller: its mode and ``top_k``
(``checked_mode``), the shape of its answer (``SearchShape``), and what it runs, as an
answer's ``explain`` reports it (``described``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from ..core.fts_query import build_every, build_match, dropped_stopwords
from ..errors import InvalidArgumentError
from ..limits import CONTENT_MODES, DUPLICATES, MODES, SNIPPET_CHARS

if TYPE_CHECKING:
    from ..core.filters import Filters
    from ..types import ContentMode, Duplicates, LexicalExplain, Mode, SearchExplain

__all__ = ["PLAIN", "SearchShape", "checked_mode", "checked_span", "described"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchShape:
    """How a search's answer is shaped: a cap of hits per file, content or only the
    snippet, why each hit ranks where it does, and each text once or every copy."""

    max_per_file: int | None = None
    content: ContentMode = "full"
    explain: bool = False
    snippet_chars: int = SNIPPET_CHARS[1]
    duplicates: Duplicates = "collapse"

    @classmethod
    def checked(cls, *, max_per_file: object, content: object, explain: object,
                snippet_chars: object, duplicates: object = "collapse") -> SearchShape:
        """From a caller's values; raises ``InvalidArgumentError`` saying what to fix."""
        if max_per_file is not None and (isinstance(max_per_file, bool)
                                         or not isinstance(max_per_file, int)
                                         or max_per_file < 1):
            raise InvalidArgumentError(
                f"max_per_file must be an integer of at least 1, or None, not {max_per_file!r}")
        if content not in CONTENT_MODES:
            raise InvalidArgumentError(
                f"unknown content {content!r}: use one of {', '.join(CONTENT_MODES)}")
        least, _, most = SNIPPET_CHARS
        if isinstance(snippet_chars, bool) or not isinstance(snippet_chars, int) \
                or not least <= snippet_chars <= most:
            raise InvalidArgumentError(f"snippet_chars must be a whole number from {least} to "
                                       f"{most}, not {snippet_chars!r}")
        if duplicates not in DUPLICATES:
            raise InvalidArgumentError(f"unknown duplicates {duplicates!r}: use one of "
                                       f"{', '.join(DUPLICATES)} (collapse: each text once, "
                                       "its other places in also_in; all: every copy)")
        return cls(max_per_file=max_per_file, content=content, explain=bool(explain),
                   snippet_chars=snippet_chars, duplicates=duplicates)


#: Answers as SPEC has them: all hits, whole contents, no explanation.
PLAIN = SearchShape()


def checked_mode(query: object, top_k: object, mode: object) -> Mode:
    """A search's mode, once the query, ``top_k`` and mode are known to be good; raises
    ``InvalidArgumentError`` saying what to fix."""
    if mode not in MODES:
        raise InvalidArgumentError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise InvalidArgumentError(f"top_k must be an integer of at least 1, not {top_k!r}")
    if not isinstance(query, str):
        raise InvalidArgumentError("query must be a string")
    return mode


def described(query: str, filters: Filters, lexical: LexicalExplain | None) -> SearchExplain:
    """What a search for ``query`` runs: its FTS5 expressions (``fts_every``: chunks
    holding every word of a query mixing CJK and other words first), the stopwords left
    out, ``filters`` as the search applies them, and the query the store's lexical branch
    runs (``lexical``: its ``lexical_plan``; on PostgreSQL, a ``tsquery``)."""
    return {"fts_query": build_match(query), "fts_every": build_every(query),
            "stopwords_dropped": dropped_stopwords(query), "filters": filters.describe(),
            "lexical": lexical}


def checked_span(*, start_line: object, end_line: object, page: object,
                 end_page: object) -> tuple[int | None, int | None, bool] | None:
    """What part of a file a read asks for: None, the file whole (its metadata and
    chunks); else the first and last line (or with True beside them, page) to read from
    disk, one page unless ``end_page`` says to which. Raises ``InvalidArgumentError``
    saying what to fix."""
    for name, value in (("start_line", start_line), ("end_line", end_line),
                        ("page", page), ("end_page", end_page)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise InvalidArgumentError(f"{name} must be a {name.rsplit('_')[-1]} number, "
                                       f"not {value!r}")
    first, last = cast("int | None", start_line), cast("int | None", end_line)
    page_one, page_last = cast("int | None", page), cast("int | None", end_page)
    if page_one is not None or page_last is not None:
        if first is not None or last is not None:
            raise InvalidArgumentError("give a range of lines (start_line, end_line) or of "
                                       "pages (page, end_page), not both")
        return page_one, page_one if page_last is None else page_last, True
    if first is None and last is None:
        return None
    return first, last, False
