"""Chinese, Japanese and Korean text for FTS5, as Lucene's CJK analyser cuts it.

SQLite's ``unicode61`` tokenizer reads a run of CJK characters without spaces as one
token, so a word inside a sentence never matches. The index therefore gets a copy of
each chunk's text in which every CJK run is replaced by its overlapping character
bigrams (``東京タワー`` -> ``東京 京タ タワ ワー``), set apart from the Latin letters or
digits it touches, and a third column with every CJK character alone (for
one-character queries). Queries are cut the same way: a run of two or three characters
is a word, found as written (one bigram, or the phrase of its bigrams); a longer run,
such as a question typed as a sentence (``如何发布网站``), is looked up by any of its
bigrams, so that the words inside it are found and bm25 ranks the chunks holding more
of them first; a single character is looked up in the character column. Text without
CJK is indexed and queried exactly as before.
"""

from __future__ import annotations

import re
import unicodedata

#: Han (with extensions and compatibility ideographs), the iteration marks, Hiragana,
#: Katakana (with the phonetic extensions and half-width forms), Hangul syllables and jamo.
_CJK_CHARS = (
    "\u1100-\u11ff\u3005-\u3007\u3041-\u309f\u30a0-\u30ff\u3130-\u318f\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff\uf900-\ufaff"
    "\uff66-\uff9f\U00020000-\U0003134f"
)
RUN = re.compile(f"[{_CJK_CHARS}]+")
#: A token of other text as FTS5 sees it once CJK runs are set apart: letters and
#: digits that are not CJK (``_`` separates, as in ``unicode61``).
OTHER_WORD = re.compile(f"[^\\W_{_CJK_CHARS}]+")


def has_cjk(text: str) -> bool:
    return RUN.search(text) is not None


def bigrams(run: str) -> list[str]:
    """``東京タワー`` -> ``[東京, 京タ, タワ, ワー]``; a single character stays itself."""
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def _normal(run: str) -> str:
    return unicodedata.normalize("NFKC", run)  # half-width katakana -> full width


def index_text(text: str) -> str | None:
    """The text FTS5 indexes in place of ``text`` (None: it has no CJK, index it as is)."""
    if not has_cjk(text):
        return None
    return RUN.sub(lambda m: " " + " ".join(bigrams(_normal(m.group()))) + " ", text)


def characters(*texts: str) -> str | None:
    """Every CJK character of ``texts``, one token each (None: there are none)."""
    chars = [c for text in texts for run in RUN.findall(text) for c in _normal(run)]
    return " ".join(chars) if chars else None


def set_apart(text: str) -> str:
    """``Python教程`` -> ``Python 教程 ``: CJK runs become words of their own."""
    return RUN.sub(lambda m: " " + _normal(m.group()) + " ", text) if has_cjk(text) else text


def is_cjk_word(word: str) -> bool:
    """True for a word that is one CJK run (as ``set_apart`` leaves them)."""
    return RUN.fullmatch(word) is not None


#: The FTS5 column holding the characters alone.
CHARS_COLUMN = "cjk"
#: The longest CJK run that is searched as written. Measured on the Obsidian help vault
#: (Chinese and Japanese, 22 questions typed as sentences, 15 words of 2 to 8
#: characters): runs of 4 characters or more looked up by any bigram found a relevant
#: note in the top ten for 21 of the questions (none as the phrase of their bigrams),
#: and ranked the words about as before (MRR@10 0.624 against 0.591: three higher, one
#: lower); keeping runs of 4 as phrases ranked words a little worse (0.608), of 5 missed
#: a question. Three characters are nearly always one word (新幹線, 快捷键), four often
#: two (发布网站).
WORD_CHARS = 3


def is_sentence(word: str) -> bool:
    """True for a CJK word (``is_cjk_word``) searched by its bigrams, not as written."""
    return len(word) > WORD_CHARS


def match_word(word: str, prefix: bool = False) -> list[str]:
    """The FTS5 clauses for one CJK word (``is_cjk_word``), any of which it matches: the
    word as written, or a longer run's distinct bigrams (a prefix is kept as written)."""
    if len(word) == 1:
        return [f'{CHARS_COLUMN} : "{word}"']
    if is_sentence(word) and not prefix:
        return [f'"{g}"' for g in pieces(word)]
    clause = '"' + " ".join(bigrams(word)) + '"'
    return [clause + "*" if prefix else clause]


def pieces(word: str) -> list[str]:
    """What a CJK word is found by in text: the word, or a longer run's distinct
    bigrams."""
    return list(dict.fromkeys(bigrams(word))) if is_sentence(word) else [word]


def phrase_tokens(words: tuple[str, ...]) -> list[str]:
    """A quoted phrase's FTS5 tokens: its CJK words as their bigrams, in order."""
    return [t for w in words for t in (bigrams(w) if is_cjk_word(w) else [w])]
