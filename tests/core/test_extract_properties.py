"""Properties of the text and code extractors on generated files, as the chunker's are
checked on generated markdown (``test_properties``): a text file (``.txt``, ``.rst``,
``.org``, ``.adoc``) loses no word, its chunks' lines point at their words and its chunks
keep within ``max_chars``; a Python file loses no line, cuts none, says none twice, and
its chunks keep within ``code_max_chars`` unless a single line is longer."""

from __future__ import annotations

import time
from dataclasses import dataclass

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rifflux.core.chunker import Chunk, ParsedDocument
from rifflux.core.extract import Source, extractor_for
from rifflux.core.extract.sections import chunked
from rifflux.core.packing import ChunkLimits

from ..helpers import WORD, spans_point_at_the_text

PROPERTY_SETTINGS = settings(max_examples=80, deadline=None,
                             suppress_health_check=[HealthCheck.too_slow])


def extracted(name: str, data: bytes, limits: ChunkLimits) -> ParsedDocument:
    """``name``'s chunks, as ``prepare_file`` makes them (its extractor, then the packer)."""
    source = Source(name, data, time.monotonic() + limits.extract_seconds)
    return chunked(extractor_for(name).extract(source, limits), limits)


def is_subsequence(needle: list[str], haystack: list[str]) -> bool:
    it = iter(haystack)
    return all(any(w == h for h in it) for w in needle)


@dataclass(frozen=True)
class Limits:
    max_chars: int
    min_chars: int
    code_max_chars: int

    def build(self) -> ChunkLimits:
        return ChunkLimits(max_chars=self.max_chars, min_chars=self.min_chars,
                           code_max_chars=self.code_max_chars)


@st.composite
def limits_strategy(draw: st.DrawFn) -> Limits:
    max_chars = draw(st.integers(80, 400))
    return Limits(max_chars, draw(st.integers(0, max_chars - 1)),
                  draw(st.integers(max_chars, 2 * max_chars)))


# --------------------------------------------------------------------------------------
# Text files: paragraphs, headings in the file's own style, blank lines, any unicode

LETTERS = "abcdefghijklmnopqrstuvwxyzé"
#: A word: ASCII and accented letters, Greek, Cyrillic, CJK, digits after a letter.
word = st.one_of(
    st.tuples(st.sampled_from(LETTERS + LETTERS.upper()),
              st.text(alphabet=LETTERS + "0123456789", max_size=9)).map("".join),
    st.sampled_from(["Ωμέγα", "привет", "東京", "naïve", "straße", "ﬁne", "x_y", "İstanbul"]),
)
#: Text between words: spaces, punctuation, a non-breaking space, a tab.
gap = st.sampled_from([" ", " ", " ", ", ", ". ", "; ", " - ", "\xa0", "\t", " (", ") "])
#: Lines of any printable unicode (no word is guessed from them: they count as words
#: only where the pattern finds them, in the file and in the chunks alike).
noise = st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc", "Zl", "Zp"]),
                max_size=40)


def sentence(max_words: int = 12) -> st.SearchStrategy[str]:
    return st.lists(st.tuples(word, gap).map("".join), min_size=1, max_size=max_words).map(
        lambda parts: "".join(parts).strip())


def paragraph() -> st.SearchStrategy[str]:
    line = st.one_of(sentence(), sentence(), sentence(40), noise)
    return st.lists(line, min_size=1, max_size=5).map("\n".join)


ADORNMENTS = "=-~^\"'`#*+:._"


@st.composite
def heading(draw: st.DrawFn, style: str) -> str:
    title = draw(sentence(6))
    if style == ".rst":
        char = draw(st.sampled_from(ADORNMENTS))
        if draw(st.booleans()):  # over- and underlined, perhaps inset
            inset = draw(st.sampled_from(["", "", " ", "  "]))
            line = char * (len(inset + title) + len(inset) + draw(st.integers(0, 4)))
            return f"{line}\n{inset}{title}\n{line}"
        return f"{title}\n{char * (len(title) + draw(st.integers(0, 4)))}"
    if style == ".org":
        return "*" * draw(st.integers(1, 4)) + " " + title
    if style == ".adoc":
        return "=" * draw(st.integers(1, 5)) + " " + title
    return title


@st.composite
def text_files(draw: st.DrawFn) -> tuple[str, str]:
    """(a name, the file's text): blocks apart by one or more blank lines (some with
    spaces in them), CRLF or unicode line breaks sometimes, a BOM sometimes."""
    style = draw(st.sampled_from([".txt", ".rst", ".org", ".adoc"]))
    blocks = draw(st.lists(st.one_of(heading(style), paragraph(), paragraph()), max_size=12))
    seps = draw(st.lists(st.sampled_from(["\n\n", "\n\n", "\n\n\n", "\n  \n", "\n\n\n\n"]),
                         min_size=len(blocks), max_size=len(blocks)))
    text = "".join(b + s for b, s in zip(blocks, seps, strict=True))
    newline = draw(st.sampled_from(["\n", "\n", "\r\n", "\u2028", "\x0c"]))
    text = text.replace("\n", newline)
    if draw(st.booleans()):
        text = text.rstrip()
    return f"notes{style}", ("\ufeff" if draw(st.booleans()) else "") + text


def chunk_words(chunks: tuple[Chunk, ...]) -> list[str]:
    return WORD.findall("\n\n".join(c.content for c in chunks))


def lines_point_at_the_text(text: str, chunks: tuple[Chunk, ...]) -> None:
    """Each chunk's first run of non-space is on ``line_start`` and its last on
    ``line_end`` (a wordless one, "-" or "42", too), its words in order within them; and
    where those runs have words, ``spans_point_at_the_text`` says the same."""
    lines = text.lstrip("\ufeff").splitlines()
    worded = []
    for chunk in chunks:
        tokens = chunk.content.split()
        assert tokens and 1 <= chunk.line_start <= chunk.line_end <= len(lines), chunk
        assert tokens[0] in lines[chunk.line_start - 1], chunk
        assert tokens[-1] in lines[chunk.line_end - 1], chunk
        source = " ".join(lines[chunk.line_start - 1 : chunk.line_end])
        position = 0
        for found in WORD.findall(chunk.content):
            position = source.find(found, position)
            assert position >= 0, (found, chunk)
            position += len(found)
        if WORD.search(tokens[0]) and WORD.search(tokens[-1]):
            worded.append(chunk)
    spans_point_at_the_text(text, tuple(worded))


@PROPERTY_SETTINGS
@given(file=text_files(), limits=limits_strategy())
# an overline: in no chunk, as the underline
@example(file=("notes.rst", "==========\nMain Title\n==========\n\nIntro words.\n"),
         limits=Limits(80, 0, 80))
# the last line empty: a line too (the file's line count)
@example(file=("notes.txt", "Ωμέγα\n\n"), limits=Limits(80, 0, 80))
# a chunk ending with a line of no word: its lines end there (they ended at its last
# word's line, before "0")
@example(file=("notes.txt", "Ωμέγα\n\n0\n\n"), limits=Limits(80, 0, 80))
@example(file=("notes.txt", "Ωμέγα\n0\n\n"), limits=Limits(80, 0, 80))
# a long line cut before its last token, which has no word: the next chunk starts there
@example(file=("notes.txt", "a\n\nΩμέγα Ωμέγα привет, привет, привет, привет - a (a00 "
               "a0000000 (a000000000 привет -\n東京\n\n"), limits=Limits(80, 0, 80))
def test_a_text_file_loses_no_word_and_its_lines_point_at_its_words(
    file: tuple[str, str], limits: Limits
) -> None:
    name, text = file
    doc = extracted(name, text.encode("utf-8"), limits.build())
    file_words = WORD.findall(text)
    got = chunk_words(doc.chunks)
    assert is_subsequence(file_words, got), (file_words, got)
    assert sorted(got) == sorted(file_words)  # and none twice
    lines_point_at_the_text(text, doc.chunks)
    assert [c.line_start for c in doc.chunks] == sorted(c.line_start for c in doc.chunks)
    assert doc.line_count == len(text.lstrip("\ufeff").splitlines())
    for chunk in doc.chunks:
        assert chunk.content.strip() and len(chunk.content) <= limits.max_chars, chunk


@PROPERTY_SETTINGS
@given(file=text_files(), limits=limits_strategy(),
       long=st.lists(st.integers(100, 1200), min_size=1, max_size=3))
def test_a_text_file_with_huge_words_keeps_every_chunk_within_max_chars(
    file: tuple[str, str], limits: Limits, long: list[int]
) -> None:
    name, text = file
    text += "".join("\n\n" + "w" * n for n in long) + "\n" + "x" * long[0] + " y"
    doc = extracted(name, text.encode("utf-8"), limits.build())
    for chunk in doc.chunks:
        assert chunk.content.strip() and len(chunk.content) <= limits.max_chars, chunk
    n_lines = len(text.lstrip("\ufeff").splitlines())
    assert all(1 <= c.line_start <= c.line_end <= n_lines for c in doc.chunks)
    assert sum(c.content.count("w") for c in doc.chunks) >= sum(long)


# --------------------------------------------------------------------------------------
# Python files: functions and classes with comments, decorators, docstrings, long bodies

identifier = st.tuples(st.sampled_from("abcdefghijklmnopqrstuvwxyz"),
                       st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789",
                               max_size=8)).map("".join).filter(
    lambda s: s not in {"if", "in", "is", "or", "as", "def", "for", "not", "and", "del",
                        "try", "else", "elif", "from", "pass", "with", "class", "while",
                        "yield", "async", "await", "break", "raise", "import", "lambda",
                        "return", "global", "assert", "except", "finally", "continue",
                        "nonlocal", "match", "case", "type"})


@st.composite
def statements(draw: st.DrawFn, indent: str, depth: int = 0) -> list[str]:
    """A body: simple statements, now and then a block with a body of its own, a long
    line, a comment or a blank line."""
    out: list[str] = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["assign", "assign", "call", "comment", "blank", "long",
                                     "if", "for"] if depth < 2 else ["assign", "call"]))
        name = draw(identifier)
        if kind == "assign":
            out.append(f"{indent}{name} = {draw(st.integers(0, 999))}")
        elif kind == "call":
            out.append(f"{indent}{name}({draw(identifier)}, 'text {draw(identifier)}')")
        elif kind == "comment":
            out.append(f"{indent}# {draw(sentence(8))}")
        elif kind == "blank":
            out.append("")
        elif kind == "long":
            out.append(f"{indent}{name} = '" + "v" * draw(st.integers(50, 500)) + "'")
        else:
            head = f"if {name}:" if kind == "if" else f"for {name} in {draw(identifier)}:"
            out.append(indent + head)
            out += draw(statements(indent + "    ", depth + 1))
    if not any(line.strip() and not line.strip().startswith("#") for line in out):
        out.append(f"{indent}pass")
    return out


@st.composite
def function(draw: st.DrawFn, indent: str = "") -> tuple[str, list[str]]:
    """(its name, its lines: a comment and a decorator above it sometimes; a comment
    right above a definition is the definition's)."""
    name = draw(identifier)
    lines: list[str] = []
    if draw(st.booleans()):
        lines.append(f"{indent}# {draw(sentence(6))}")
    if draw(st.booleans()):
        lines.append(f"{indent}@{draw(identifier)}")
    lines.append(f"{indent}def {name}({draw(identifier)}):")
    if draw(st.booleans()):
        lines.append(f'{indent}    """{draw(sentence(6))}"""')
    lines += draw(statements(indent + "    "))
    return name, lines


@st.composite
def python_files(draw: st.DrawFn) -> tuple[str, dict[int, str]]:
    """(the file, where each definition starts: its line (1-based) -> the breadcrumb it
    must have)."""
    lines: list[str] = []
    crumbs: dict[int, str] = {}
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["function", "function", "class", "import", "assign",
                                     "comment"]))
        if kind == "function":
            name, body = draw(function())
            crumbs.update({len(lines) + at: name for at in _def_lines(body)})
            lines += body
        elif kind == "class":
            cls = draw(identifier)
            if draw(st.booleans()):
                lines.append(f"# {draw(sentence(5))}")
            lines.append(f"class {cls.title()}:")
            crumbs[len(lines)] = cls.title()
            if draw(st.booleans()):
                lines.append(f"    {draw(identifier)} = 1")
            for _ in range(draw(st.integers(1, 4))):
                name, body = draw(function("    "))
                if draw(st.booleans()):
                    lines.append("")
                crumbs.update({len(lines) + at: f"{cls.title()} > {name}"
                               for at in _def_lines(body)})
                lines += body
        elif kind == "import":
            lines.append(f"import {draw(identifier)}")
        elif kind == "assign":
            lines.append(f"{draw(identifier).upper()} = {draw(st.integers(0, 9))}")
        else:
            lines.append(f"# {draw(sentence(8))}")
        lines += [""] * draw(st.integers(0, 2))
    return "\n".join(lines) + ("\n" if draw(st.booleans()) else ""), crumbs


def _def_lines(body: list[str]) -> range:
    """The lines (1-based, in ``body``) of a definition up to its ``def``: the comment
    and decorator above it, if any, and the ``def``."""
    return range(1, next(i for i, x in enumerate(body, 1) if x.lstrip().startswith("def "))
                 + 1)


@PROPERTY_SETTINGS
@given(file=python_files(), limits=limits_strategy())
# a body cut at its last statement still too long with the line that did not fit: cut
# again before that line (a chunk of 92 characters at code_max_chars=80)
@example(file=("def a(a):\n    if a:\n        a = 0\n        a = 0\n        a = '"
               + "v" * 50 + "'", {1: "a"}), limits=Limits(80, 0, 80))
# a comment between a class's line and its first method (the class's child in Python's
# tree, not its body's) is the method's, as any comment right above a definition
@example(file=("class A:\n    # a\n    def a(a):\n        a = 0\n",
               {1: "A", 2: "A > a", 3: "A > a"}), limits=Limits(80, 0, 80))
def test_a_python_file_loses_no_line_and_cuts_none(
    file: tuple[str, dict[int, str]], limits: Limits
) -> None:
    text, crumbs = file
    doc = extracted("module.py", text.encode("utf-8"), limits.build())
    lines = text.splitlines()
    covered: list[int] = []
    for chunk in doc.chunks:
        assert 1 <= chunk.line_start <= chunk.line_end <= len(lines), chunk
        # a chunk is its lines, whole: no line cut, none changed
        assert chunk.content == "\n".join(lines[chunk.line_start - 1 : chunk.line_end])
        assert chunk.content.strip()
        if chunk.line_start < chunk.line_end:  # only a single line may be longer
            assert len(chunk.content) <= limits.code_max_chars, chunk
        covered += range(chunk.line_start, chunk.line_end + 1)
    assert len(covered) == len(set(covered)), "a line in two chunks"
    assert covered == sorted(covered), "chunks out of order"
    lost = [i for i, line in enumerate(lines, 1) if line.strip() and i not in set(covered)]
    assert not lost, [lines[i - 1] for i in lost]
    # every definition is in a chunk of its own breadcrumb (its first line, as written)
    for at, crumb in crumbs.items():
        holder = next(c for c in doc.chunks if c.line_start <= at <= c.line_end)
        assert holder.heading_path == crumb, (lines[at - 1], holder)
