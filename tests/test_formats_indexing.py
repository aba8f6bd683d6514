"""Files of every kind indexed through the library (``test_formats``: each found where it
is): each hostile one (an encrypted PDF, a truncated one, a zip bomb, a document that is
not a ZIP archive, a binary file named ``.txt``, a minified script, a grammar that fails,
a scan) is skipped or cut saying why, and nothing else is lost: the note beside them is
found. An edited PDF re-embeds only the chunks whose text changed, an unchanged one is
never read again, and one read past its time is indexed as far as it was read."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rifflux import Rifflux
from rifflux.config import Settings
from rifflux.core.extract import Source, code, office, pdf
from rifflux.core.packing import ChunkLimits

from .formats import PNG, deck, scanned_pdf, zip_bomb
from .formats import pdf as make_pdf
from .helpers import CountingEmbedder, write

pytestmark = pytest.mark.anyio

OWL_PAGES = [
    ["Introduction", "Owls are nocturnal birds of prey that hunt in silence."],
    ["Barn Owl", "The barn owl has a heart shaped face that funnels sound to its ears."],
    ["Snowy Owl", "Snowy owls live in the arctic tundra and hunt lemmings by day."],
    ["Tawny Owl", "Tawny owls call to each other across the wood at night."],
]
OWL_OUTLINE = {"Introduction": 0, "Barn Owl": 0, "Snowy Owl": 0, "Tawny Owl": 0}


def owls(pages: list[list[str]] = OWL_PAGES) -> bytes:
    return make_pdf(pages, outline=OWL_OUTLINE, title="Field Guide to Owls",
                    author="Ada Lovelace")


def every_kind(tmp_path: Path) -> Rifflux:
    """An index of every kind of file, with the hash embedder (and a counting one)."""
    settings = Settings(db_path=tmp_path / "i.db", embedding_backend="hash",
                        kinds=("default", "code"))
    return Rifflux(settings=settings, embedder=CountingEmbedder())


async def test_each_hostile_file_is_skipped_saying_why_and_the_note_beside_it_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(office, "MAX_UNPACKED", 2_000_000)  # (a small bomb: as a real one)

    def no_grammar(language: str) -> object:
        raise OSError(f"the {language} grammar's library is missing")

    monkeypatch.setattr(code, "_parser", no_grammar)
    root = tmp_path / "notes"
    write(root, "heron.md", "# Heron\n\nThe grey heron waits by the pond for frogs.\n")
    truncated = owls()
    hostile = {
        "secret.pdf": make_pdf([["The secret owl sanctuary map."]], password="hoot"),
        "cut.pdf": truncated[: len(truncated) // 2],
        "bomb.pptx": zip_bomb(deck([("Owls", "owl words", "")]), "ppt/media/zeros.bin", 2),
        "letter.docx": b"Dear owl, this is plain text saved as .docx.",
        "picture.txt": PNG,
        "bundle.min.js": b"var owl=1;" * 1_100_000,
    }
    for name, data in hostile.items():
        (root / name).write_bytes(data)
    write(root, "owl.py", "def hoot():\n    return 'hoo'\n\n\ndef fly():\n    return 1\n")
    (root / "scan.pdf").write_bytes(scanned_pdf(2))
    async with every_kind(tmp_path) as rf:
        result = await rf.reindex(root)
        heron = await rf.search("heron frogs", mode="lexical")
        hoot = await rf.search("hoot", mode="lexical")
        files = {f["path"] for f in await rf.files()}
    warnings = {Path(w["path"]).name: w["reason"] for w in result["warnings"]}
    assert result["errors"] == []
    assert set(warnings) == {*hostile, "owl.py", "scan.pdf"}
    said = {
        "secret.pdf": "an encrypted PDF (it needs a password to be read)",
        "cut.pdf": "not a PDF PDFium can read, damaged or truncated?",
        "bomb.pptx": "over the limit of 20,000 parts and 2,000,000 bytes (a zip bomb?)",
        "letter.docx": "not a Word document (not a ZIP archive",
        "picture.txt": "not text: a PNG image with a .txt name",
        "bundle.min.js": "a line of 11,000,000 characters (minified or generated code?)",
        "owl.py": "the python grammar failed (OSError: the python grammar's library is "
                  "missing): read as plain text",
        "scan.pdf": "no text layer (a scan, or pages of images): indexed with no text",
    }
    for name, words in said.items():
        assert words in warnings[name], (name, warnings[name])
    for name in hostile:
        assert "skipped" in warnings[name], (name, warnings[name])
    # nothing else is lost: the note, the code read as text and the scan are indexed
    assert files == {"heron.md", "owl.py", "scan.pdf"}
    assert result["indexed_files"] == 3
    assert [h["path"] for h in heron] == ["heron.md"]
    assert [(h["path"], h["kind"]) for h in hoot] == [("owl.py", "code")]


async def test_an_edited_pdf_reembeds_only_the_chunks_whose_text_changed(
    tmp_path: Path
) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    path = root / "owls.pdf"
    path.write_bytes(owls())
    embedder = CountingEmbedder()
    settings = Settings(db_path=tmp_path / "i.db", embedding_backend="hash")
    async with Rifflux(settings=settings, embedder=embedder) as rf:
        first = await rf.reindex(root)
        before = len(embedder.embedded)
        edited = [list(page) for page in OWL_PAGES]
        edited[2][1] = "Snowy owls nest on the ground and hunt lemmings by day."
        path.write_bytes(owls(edited))
        second = await rf.reindex(root)
        new = embedder.embedded[before:]
        hits = await rf.search("nest on the ground", mode="lexical")
        status = await rf.status()
    assert first["indexed_files"] == 1 and before == len(OWL_PAGES)
    assert second["indexed_files"] == 1
    assert len(new) == 1 and "nest on the ground" in new[0], new
    assert [(h["path"], h.get("page")) for h in hits] == [("owls.pdf", 3)]
    assert status["pending_embeddings"] == 0


async def test_an_unchanged_pdf_is_never_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: Counter[str] = Counter()
    extract = pdf.Pdf.extract

    def spy(self: pdf.Pdf, source: Any, limits: ChunkLimits) -> Any:
        read[source.name] += 1
        return extract(self, source, limits)

    monkeypatch.setattr(pdf.Pdf, "extract", spy)
    root = tmp_path / "notes"
    root.mkdir()
    data = owls()
    (root / "owls.pdf").write_bytes(data)
    (root / "other.pdf").write_bytes(make_pdf([["Another owl document."]]))
    embedder = CountingEmbedder()
    settings = Settings(db_path=tmp_path / "i.db", embedding_backend="hash")
    async with Rifflux(settings=settings, embedder=embedder) as rf:
        await rf.reindex(root)
        assert read == {"owls.pdf": 1, "other.pdf": 1}
        embedded = len(embedder.embedded)
        again = await rf.reindex(root)  # the same size and mtime: not even read
        st = (root / "owls.pdf").stat()
        os.utime(root / "owls.pdf", ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
        touched = await rf.reindex(root)  # a new mtime, the same bytes: hashed only
        (root / "owls.pdf").write_bytes(data)  # written again, the same bytes
        rewritten = await rf.reindex(root)
        forced = await rf.reindex(root, force=True)  # (the spy sees every read)
    assert again["indexed_files"] == 0 and again["skipped_files"] == 2
    assert touched["indexed_files"] == 0 and rewritten["indexed_files"] == 0
    assert forced["indexed_files"] == 2
    assert read == {"owls.pdf": 2, "other.pdf": 2}  # the first time, and when forced
    assert len(embedder.embedded) == embedded


async def test_a_pdf_cut_by_the_time_limit_is_indexed_as_far_as_it_was_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Source, "out_of_time", lambda self: True)  # (from the first page)
    root = tmp_path / "notes"
    root.mkdir()
    (root / "owls.pdf").write_bytes(owls())
    write(root, "heron.md", "# Heron\n\nThe grey heron waits by the pond.\n")
    async with every_kind(tmp_path) as rf:
        result = await rf.reindex(root)
        heron = await rf.search("heron", mode="lexical")
        owl = await rf.get_file("owls.pdf")
    warnings = {Path(w["path"]).name: w["reason"] for w in result["warnings"]}
    assert warnings == {"owls.pdf": "cut after 0 of its 4 pages: reading it took over the "
                                    "limit of 60 s a file (extract_seconds)"}
    assert result["indexed_files"] == 2 and heron
    assert owl is not None and owl["chunks"] == [] and owl["title"] == "Field Guide to Owls"


async def test_the_extraction_limits_are_settings(tmp_path: Path) -> None:
    from .helpers import write_pdf

    root = tmp_path / "docs"
    write_pdf(root / "long.pdf", [f"Page {n} tells of the bittern booming." for n in range(1, 9)])
    settings = Settings(db_path=tmp_path / "i.db", embedding_backend="hash", max_text_chars=100)
    async with Rifflux(settings=settings) as rf:
        result = await rf.reindex(root)
        pages = {h["page"] for h in await rf.search("bittern", mode="lexical", top_k=10)}
    assert any("max_text_chars" in w["reason"] for w in result["warnings"]), result["warnings"]
    assert pages and max(pages) < 8  # the rest was cut
