"""Notes in any language: Chinese, Japanese and Korean words found inside running text
by lexical (and so hybrid) search; accents either way, Cyrillic, Greek and symbols keep
working; an index of the previous version learns CJK when it is opened."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rifflux import Rifflux
from rifflux.core.fts_query import build_match

from .helpers import (
    CountingEmbedder,
    call,
    eventually,
    indexed_then_downgraded,
    mcp_session,
    rifflux_cli,
    write,
    write_all,
)

pytestmark = pytest.mark.anyio

NOTES = {
    "zh.md": "# 机器学习入门\n\n机器学习是人工智能的一个分支。我们在北京大学学习深度学习和自然语言"
             "处理。这个教程介绍了如何用Python训练模型。\n\n## 数据准备\n\n首先收集数据，然后清洗"
             "数据。\n",
    "ja.md": "# 東京旅行\n\n昨日は東京タワーに行きました。浅草寺も見て、とても楽しかったです。"
             "新幹線で大阪へ移動しました。\n\n## 食事\n\n寿司とラーメンを食べました。\n",
    "ko.md": "# 서울 여행\n\n서울에서 오늘 날씨가 좋습니다. 경복궁을 구경하고 한강에서 자전거를 "
             "탔습니다.\n\n## 음식\n\n김치찌개와 비빔밥을 먹었습니다.\n",
    "en.md": "# Hotels\n\nA hotel near the station, with a café that serves breakfast.\n",
    "de.md": "# Übersicht\n\nDie Übersicht der Straßen in München.\n",
    "ru.md": "# Погода\n\nСегодня в Москве хорошая погода.\n",
    "el.md": "# Καιρός\n\nΣήμερα ο καιρός στην Αθήνα είναι καλός.\n",
}

# (query, the files a lexical search must return, in any order)
FOUND = [
    ("学习", {"zh.md"}),  # two characters inside a sentence
    ("数据", {"zh.md"}),  # in a section of its own
    ("人工智能", {"zh.md"}),  # four characters
    ("東京", {"ja.md"}),
    ("新幹線", {"ja.md"}),  # three kanji
    ("ラーメン", {"ja.md"}),  # katakana, with the long vowel mark
    ("날씨", {"ko.md"}),
    ("한강", {"ko.md"}),  # with a particle attached: 한강에서
    ("경복궁", {"ko.md"}),
    ('"自然语言处理"', {"zh.md"}),  # a quoted phrase across CJK text
    ('"浅草寺も見て"', {"ja.md"}),
    ("寿", {"ja.md"}),  # a single character
    ("京", {"ja.md", "zh.md"}),  # 東京 and 北京
    ("강", {"ko.md"}),
    ("Python 教程", {"zh.md"}),  # mixed
    ("東京 hotel", {"ja.md", "en.md"}),
    ("Python教程", {"zh.md"}),  # mixed, no space
    ("cafe", {"en.md"}),  # accents either way
    ("café", {"en.md"}),
    ("Ubersicht", {"de.md"}),
    ("übersicht", {"de.md"}),
    ("strasse München", {"de.md"}),
    ("погода", {"ru.md"}),  # Cyrillic, any case
    ("Москве", {"ru.md"}),
    ("καιρός", {"el.md"}),  # Greek
    ("Αθήνα", {"el.md"}),
]

# Queries that must find nothing: the characters are there, the word is not.
NOT_FOUND = ["大阪タワー", "东京", "学大", "서울날씨"]


@pytest.fixture
async def rf(tmp_path: Path) -> AsyncIterator[Rifflux]:
    root = write_all(tmp_path / "notes", NOTES)
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
        yield rf


@pytest.mark.parametrize(("query", "files"), FOUND, ids=[q for q, _ in FOUND])
async def test_words_are_found_inside_running_text_in_lexical_and_hybrid_mode(
    rf: Rifflux, query: str, files: set[str]
) -> None:
    lexical = await rf.search(query, mode="lexical")
    hybrid = await rf.search(query, mode="hybrid")
    assert {h["path"] for h in lexical} == files
    lexical_ids = [h["chunk_id"] for h in lexical]
    ranks = {h["chunk_id"]: h["score_breakdown"] for h in hybrid}
    for rank, chunk_id in enumerate(lexical_ids, 1):  # hybrid holds the lexical list as is
        assert ranks[chunk_id].get("lexical_rank") == rank
    assert "**" in lexical[0]["snippet"]  # the match is marked


@pytest.mark.parametrize("query", NOT_FOUND)
async def test_a_word_whose_characters_are_only_scattered_is_not_found(
    rf: Rifflux, query: str
) -> None:
    assert await rf.search(query, mode="lexical") == []


async def test_snippets_mark_cjk_words_inside_sentences(rf: Rifflux) -> None:
    hit = (await rf.search("人工智能 Python", mode="lexical"))[0]
    assert "**人工智能**" in hit["snippet"] and "**Python**" in hit["snippet"]
    single = (await rf.search("寿", mode="lexical"))[0]
    assert "**寿**司" in single["snippet"]


@pytest.mark.parametrize("query", ["🙂", "→ ★", "東京🗼", "C++ & C#", "\u200b", "ー", "々"])
async def test_emoji_and_symbols_are_valid_queries(rf: Rifflux, query: str) -> None:
    for mode in ("lexical", "hybrid"):
        await rf.search(query, mode=mode)  # never an FTS5 syntax error
    assert (await rf.search("東京🗼", mode="lexical"))[0]["path"] == "ja.md"


def test_cjk_queries_become_bigrams_and_single_characters_the_character_column() -> None:
    assert build_match("東京タワー") == '"東京 京タ タワ ワー"'
    assert build_match("寿") == 'cjk : "寿"'
    assert build_match("Python教程") == '"Python" OR "教程"'
    assert build_match('"東京 タワー"') == '"東京 タワ ワー"'
    assert build_match("the hotel") == '"hotel"'  # English is as it was


async def test_a_cjk_edit_is_seen_by_the_watcher(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write(root, "ja.md", NOTES["ja.md"])
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder(),
                       watch_paths=[root]) as rf:
        await eventually(lambda: rf.search("新幹線", mode="lexical"))
        write(root, "ja.md", NOTES["ja.md"].replace("新幹線", "飛行機"))

        async def edited() -> bool:
            return (bool(await rf.search("飛行機", mode="lexical"))
                    and not await rf.search("新幹線", mode="lexical"))

        await eventually(edited)


async def test_an_index_of_version_4_learns_cjk_when_opened_and_keeps_its_vectors(
    tmp_path: Path
) -> None:
    root = tmp_path / "notes"
    for name, text in NOTES.items():
        write(root, name, text)
    db = tmp_path / "i.db"
    embedder, embedded = await indexed_then_downgraded(db, root, 4)
    with sqlite3.connect(db) as conn:  # what version 4 found: the whole sentence, one token
        assert conn.execute("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH "
                            "'\"学习\"'").fetchone()[0] == 0
    async with Rifflux(db, embedder=embedder) as rf:
        found = await rf.search("学习", mode="lexical")
        jobs = (await rf.status())["jobs"]
        # the files are read again for their links (version 6), not for CJK
        assert [j["source"] for j in jobs] == ["startup"]
        await rf.wait_for_job(jobs[0]["id"])
    assert [h["path"] for h in found] == ["zh.md"]
    assert len(embedder.embedded) == embedded
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('integrity-check')")
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() \
            == ("6",)


async def test_cjk_search_through_the_command_line_and_mcp(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    for name, text in NOTES.items():
        write(root, name, text)
    assert rifflux_cli(tmp_path, "--db", "index.db", "index", str(root)).returncode == 0
    done = rifflux_cli(tmp_path, "--db", "index.db", "search", "人工智能", "--mode", "lexical",
                       "--json")
    assert done.returncode == 0, done.stderr
    assert [h["path"] for h in json.loads(done.stdout)["results"]] == ["zh.md"]
    async with mcp_session(tmp_path) as session:
        await call(session, "reindex", path=str(root))
        found = await call(session, "search_rifflux", query="한강", mode="hybrid",
                           content="snippet")
    assert found["results"][0]["path"] == "ko.md"
    assert "**한강**" in found["results"][0]["snippet"]
