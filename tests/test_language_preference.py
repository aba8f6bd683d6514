"""The language of each chunk (issue 36): found at index time, on hits as ``lang``; a
``lang`` filter kept inside both branches, on both stores and through every surface;
hybrid search preferring the question's language where the index mixes languages,
and changing nothing where it cannot tell the question's language or no chunk is in
it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from rifflux import Rifflux
from rifflux.config import Settings
from rifflux.core.fusion import OTHER_LANGUAGE, Combined, prefer
from rifflux.core.language import chunk_language, preferred_language, query_language
from rifflux.errors import InvalidArgumentError
from rifflux.store.sqlite.schema import SCHEMA_VERSION

from .helpers import (
    CountingEmbedder,
    Location,
    call,
    eventually,
    index_rows,
    indexed_then_downgraded,
    languages_untold,
    mcp_session,
    rifflux_cli,
    write_all,
)

pytestmark = pytest.mark.anyio

#: One page of help in English and in German (as a translated vault holds them): the
#: German page says "Vault" more often, so that without a preference it answers an
#: English question first.
PAGES = {
    "en/glossary.md": "# Glossary\n\n## Attachment\n\nA file that you add to a note, such as "
                      "an image, a PDF or an audio recording.\n\n## Vault\n\nThe folder on "
                      "your computer where Obsidian keeps your notes, their attachments and "
                      "the settings of the app.\n\n## Plugin\n\nA plugin extends Obsidian "
                      "with new features.\n",
    "de/glossar.md": "# Glossar\n\n## Anhang\n\nEine Datei, die du einer Notiz hinzufügst, "
                     "etwa ein Bild, ein PDF oder eine Audioaufnahme.\n\n## Vault\n\nEin "
                     "Vault ist ein Ordner auf deinem Computer. Der Vault enthält deine "
                     "Notizen und Anhänge; jeder Vault hat eigene Einstellungen.\n\n"
                     "## Erweiterung\n\nEine Erweiterung ergänzt Obsidian um neue "
                     "Funktionen.\n",
}
#: A note in two languages, a section each (each long enough to be a chunk of its own).
MIXED = {
    "trip.md": "# Trip\n\n## Plan\n\nWe take the night train to Vienna on Friday and walk "
               "through the old town on Saturday morning, then we visit the museum of "
               "natural history and have dinner with our friends near the river Danube.\n\n"
               "## Reiseplan\n\nWir nehmen am Freitag den Nachtzug nach Wien und gehen am "
               "Samstagmorgen durch die Altstadt, dann besuchen wir das Naturhistorische "
               "Museum und essen mit unseren Freunden an der Donau zu Abend.\n",
    # a chunk whose language cannot be told (no letters)
    "numbers.md": "# 2026\n\n2026 Vienna 1234 5678 2026\n",
}


def test_languages_are_told_for_chunks_and_only_for_questions_long_enough() -> None:
    assert chunk_language("Vault", "Ein Vault ist ein Ordner auf deinem Computer.") == "de"
    assert chunk_language("Notes", "A vault is a folder on your computer.") == "en"
    assert chunk_language("2026", "1234 5678 -- 42") is None  # no letters to tell by
    # Han characters without kana are Chinese (the model alone says Japanese here)
    assert chunk_language("部署", "- 说明创建容器的步骤。\n- 介绍持续集成的配置方法。\n"
                          "- 说明如何部署到云端。") == "zh"
    assert chunk_language("デプロイ", "- コンテナーを作成する手順を説明します。") == "ja"
    assert query_language("what is a vault") == "en"
    assert query_language("Was ist ein Vault?") == "de"
    assert query_language("ボールトとは何ですか") == "ja"
    assert query_language("vault") is None  # one word: not to be trusted
    assert query_language("canvas") is None


def test_a_question_of_han_characters_alone_prefers_nothing_where_japanese_is_indexed(
        ) -> None:
    question = "演算子 | 代替表記 | 説"  # (a run of a Japanese page in kanji alone)
    assert query_language(question) == "zh"
    assert preferred_language(question, frozenset({"zh", "en"})) == "zh"
    assert preferred_language(question, frozenset({"zh", "ja", "en"})) is None
    assert preferred_language("テンプレートで条件分岐を使う", frozenset({"zh", "ja"})) == "ja"


def test_prefer_lowers_other_languages_and_keeps_unknown_ones() -> None:
    assert Settings().other_language_share == OTHER_LANGUAGE  # (the default, measured)
    fused = [Combined("de", 1.0, 0.0, (1, 1)), Combined("en", 0.8, 0.0, (2, 2)),
             Combined("none", 0.7, 0.0, (3, 3)), Combined("fr", 0.1, 0.0, (4, 4))]
    langs = {"de": "de", "en": "en", "fr": "fr"}
    assert [c.key for c in prefer(fused, langs, "en", factor=0.5)] == ["en", "none", "de",
                                                                      "fr"]
    assert [c.key for c in prefer(fused, langs, "en", factor=0.9)] == ["de", "en", "none",
                                                                      "fr"]
    # a clear winner in another language stays above weak matches in the question's
    assert prefer([Combined("de", 1.0, 0.0, (1, 1)), Combined("en", 0.2, 0.0, (2, 2))],
                  langs, "en", factor=0.5)[0].key == "de"


async def test_hits_say_their_language_and_lang_keeps_those_chunks_in_every_mode(
        db: Location, tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write_all(root, {**PAGES, **MIXED})
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
        every = await rf.search("Vienna Wien Vault train Nachtzug", mode="lexical", top_k=20)
        langs = {(h["path"], h["heading_path"]): h.get("lang") for h in every}
        assert langs[("trip.md", "Trip > Plan")] == "en"
        assert langs[("trip.md", "Trip > Reiseplan")] == "de"
        assert langs[("numbers.md", "2026")] is None
        for mode in ("lexical", "semantic", "hybrid"):
            german = await rf.search("Vienna Wien Vault train Nachtzug", mode=mode, top_k=20,
                                     lang="de")
            assert german, mode
            assert {h.get("lang") for h in german} == {"de"}, mode
            assert ("trip.md", "Trip > Reiseplan") in {(h["path"], h["heading_path"])
                                                        for h in german}, mode
            both = await rf.search("Vienna Wien Vault train Nachtzug", mode=mode, top_k=20,
                                   lang=["EN", "de-AT"])
            assert {h.get("lang") for h in both} == {"en", "de"}, mode
        assert await rf.search("Vienna", mode="semantic", lang="ja") == []
        with pytest.raises(InvalidArgumentError, match="not a language code"):
            await rf.search("Vienna", lang="german")


@pytest.mark.parametrize("share", [1.0, 0.5])
async def test_an_english_question_ranks_the_english_page_first_over_its_german_one(
        db: Location, tmp_path: Path, share: float) -> None:
    """With the bundled (English) model; without the preference (share 1) the German
    page, which says "Vault" three times, comes first: the preference is what puts the
    English page first."""
    root = tmp_path / "notes"
    write_all(root, PAGES)
    settings = Settings().with_overrides(db_path=db, other_language_share=share,
                                         embedding_backend="onnx")
    async with Rifflux(settings=settings) as rf:
        await rf.reindex(root)
        hits = await rf.search("what is a vault", top_k=4)
        first = (hits[0]["path"], hits[0].get("lang"))
        assert first == (("en/glossary.md", "en") if share < 1 else ("de/glossar.md", "de"))
        # a question too short to tell its language by changes nothing
        short = [h["chunk_id"] for h in await rf.search("vault", top_k=4)]
        assert short[0] == hits[0 if share == 1 else 1]["chunk_id"]


async def test_a_question_in_a_language_no_chunk_has_changes_nothing(
        db: Location, tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write_all(root, {**PAGES, **MIXED})
    ranked: dict[float, list[list[str]]] = {}
    questions = ["Qu'est-ce qu'un coffre pour mes notes en 2026 ?",  # French: none here
                 "Vienna 2026"]  # too short to tell
    for share in (1.0, 0.5):
        settings = Settings().with_overrides(db_path=db, other_language_share=share,
                                             embedding_backend="onnx")
        async with Rifflux(settings=settings) as rf:
            await rf.reindex(root)
            ranked[share] = [[h["chunk_id"] for h in await rf.search(q, top_k=10)]
                             for q in questions]
    assert all(ranked[1.0])
    # (the chunk of no language would rise if the others were counted as "another")
    assert ranked[0.5] == ranked[1.0]


async def test_an_index_of_version_7_learns_its_chunks_languages_when_opened(
        tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write_all(root, PAGES)
    db = tmp_path / "i.db"
    embedder, embedded = await indexed_then_downgraded(db, root, 7)
    async with Rifflux(db, embedder=embedder) as rf:
        # (their languages are told at start, from the stored chunks: no file read again)
        hits = await eventually(lambda: rf.search("Vault", mode="lexical", lang="de"), 60)
        for job in (await rf.status())["jobs"]:
            await rf.wait_for_job(job["id"])
    assert [(h["path"], h.get("lang")) for h in hits] == [("de/glossar.md", "de")]
    assert len(embedder.embedded) == embedded  # the vectors are kept
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM chunks WHERE lang IS NULL").fetchone() == (0,)


async def test_lang_through_the_command_line_and_mcp(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write_all(root, {**PAGES, **MIXED})
    assert rifflux_cli(tmp_path, "--db", "index.db", "index", str(root)).returncode == 0
    done = rifflux_cli(tmp_path, "--db", "index.db", "search", "Vienna Wien", "--mode",
                       "lexical", "--lang", "de", "--json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)["results"]
    assert [(h["path"], h["lang"]) for h in found] == [("trip.md", "de")]
    bad = rifflux_cli(tmp_path, "--db", "index.db", "search", "Wien", "--lang", "deutsch")
    assert bad.returncode != 0 and "not a language code" in bad.stderr
    async with mcp_session(tmp_path) as session:
        await call(session, "reindex", path=str(root))
        answer = await call(session, "search_rifflux", query="Vienna Wien", mode="lexical",
                            lang=["en"])
    assert [(h["path"], h["lang"]) for h in answer["results"]] == [("trip.md", "en")]


async def test_a_file_is_searchable_before_its_languages_are_told_and_lang_says_how_many_wait(
        db: Location, tmp_path: Path) -> None:
    """The languages are told after the commit (as vectors are made): until then the
    text is found, a ``lang`` filter cannot keep its chunks and says how many wait; the
    next writer to open the index tells them, and a reader open meanwhile sees them."""
    root = tmp_path / "notes"
    write_all(root, {**PAGES, **MIXED})
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
        assert rf.languages_pending() == 0
    waiting = await languages_untold(db)
    assert waiting > 0
    async with Rifflux(db, embedder=CountingEmbedder(),
                       settings=Settings(read_only=True)) as reader:
        hits = await reader.search("Vienna Wien", mode="lexical")
        assert "trip.md" in {h["path"] for h in hits}  # searchable, its language untold
        assert all("lang" not in h for h in hits)
        assert await reader.search("Vienna Wien", mode="lexical", lang="de") == []
        assert reader.languages_pending() == waiting
        async with Rifflux(db, embedder=CountingEmbedder()) as writer:  # tells them at start
            await eventually(lambda: writer.languages_pending() == 0, 30)

            async def told() -> list[tuple[str, str | None]]:
                found = await reader.search("Vienna Wien", mode="lexical", lang="de")
                return [(h["path"], h.get("lang")) for h in found]

            assert await eventually(told, 30) == [("trip.md", "de")]
            assert reader.languages_pending() == 0
    assert await index_rows(db, "SELECT count(*) FROM files WHERE langs_pending > 0") == [(0,)]
    assert await index_rows(db, "SELECT count(*) FROM chunks WHERE lang = 'de'") == [(4,)]


async def test_a_lang_filter_answer_says_how_many_chunks_wait_for_their_language(
        tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write_all(root, {**PAGES, **MIXED})
    assert rifflux_cli(tmp_path, "--db", "index.db", "index", str(root)).returncode == 0
    waiting = await languages_untold(tmp_path / "index.db")
    done = rifflux_cli(tmp_path, "--db", "index.db", "search", "Vienna Wien", "--mode",
                       "lexical", "--lang", "de", "--json")
    answer = json.loads(done.stdout)
    assert answer["results"] == [] and answer["languages_pending"] == waiting
    assert f"{waiting} chunks still wait for their language" in answer["hint"]
    assert "lang filter leaves them out" in done.stderr
    unfiltered = rifflux_cli(tmp_path, "--db", "index.db", "search", "Vienna Wien", "--mode",
                             "lexical", "--json")  # (nothing weighs a language: not said)
    assert "languages_pending" not in json.loads(unfiltered.stdout)
    async with mcp_session(tmp_path) as session:  # (a writer: told at its start)
        async def told() -> dict[str, Any] | None:
            found = await call(session, "search_rifflux", query="Vienna Wien",
                               mode="lexical", lang=["de"])
            return found if found["results"] else None

        answer = await eventually(told, 30)
    assert [h["path"] for h in answer["results"]] == ["trip.md"]
    assert "languages_pending" not in answer


async def test_an_index_of_version_8_opens_with_its_languages_and_reads_nothing_again(
        tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write_all(root, {**PAGES, **MIXED})
    db = tmp_path / "i.db"
    embedder, embedded = await indexed_then_downgraded(db, root, 8)
    told = await index_rows(db, "SELECT id, lang FROM chunks ORDER BY id")
    async with Rifflux(db, embedder=embedder) as rf:
        assert not (await rf.status())["jobs"]  # (no file read again)
        hits = await rf.search("Vienna Wien", mode="lexical", lang="de")
    assert [(h["path"], h.get("lang")) for h in hits] == [("trip.md", "de")]
    assert len(embedder.embedded) == embedded
    assert await index_rows(db, "SELECT id, lang FROM chunks ORDER BY id") == told
    assert await index_rows(db, "SELECT value FROM meta WHERE key = 'schema_version'") == [
        (str(SCHEMA_VERSION),)]
