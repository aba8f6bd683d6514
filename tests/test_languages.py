"""Notes in any language: Chinese, Japanese and Korean words found inside running text
by lexical (and so hybrid) search; accents either way, Cyrillic, Greek and symbols keep
working; an index of the previous version learns CJK when it is opened."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rifflux import Rifflux
from rifflux.answers import why
from rifflux.core.fts_query import build_every, build_match
from rifflux.mcp.answers import WORDS as MCP_WORDS
from rifflux.store.sqlite.schema import SCHEMA_VERSION

from .helpers import (
    CountingEmbedder,
    Location,
    bm25,
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
    ("大阪タワー", {"ja.md"}),  # a long run: the words inside it (大阪, 東京タワー)
    ("서울날씨", {"ko.md"}),  # 서울, 날씨
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

# Queries that must find nothing: the characters are there, the word (of up to three
# characters, found as written) is not.
NOT_FOUND = ["东京", "学大", "北大学", "경복강", '"大阪タワー"']


@pytest.fixture
async def rf(db: Location, tmp_path: Path) -> AsyncIterator[Rifflux]:
    root = write_all(tmp_path / "notes", NOTES)
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
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
    assert build_match("新幹線") == '"新幹 幹線"'  # up to three characters: as written
    assert build_match("東京タワー") == '"東京" OR "京タ" OR "タワ" OR "ワー"'  # any bigram
    assert build_match("寿") == 'cjk : "寿"'
    assert build_match("Python教程") == '"Python" OR "教程"'
    assert build_every("Python教程") == '"Python" AND "教程"'  # these first
    assert build_every("Python 如何发布") == '"Python" AND ("如何" OR "何发" OR "发布")'
    assert build_every("发布 网站") is None and build_every("python tutorial") is None
    assert build_match('"東京 タワー"') == '"東京 タワ ワー"'  # a quoted phrase as written
    assert build_match("the hotel") == '"hotel"'  # English is as it was


async def test_a_cjk_edit_is_seen_by_the_watcher(db: Location, tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write(root, "ja.md", NOTES["ja.md"])
    async with Rifflux(db, embedder=CountingEmbedder(),
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
            == (str(SCHEMA_VERSION),)


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


#: Help notes as a Chinese or Japanese vault has them, and English ones beside them.
HELP = {
    "zh/发布/开始发布.md": "# 开始发布\n\n在设置中启用发布服务，选择要发布的笔记，然后点击发布。"
                          "你的笔记会出现在自己的网站上，可以把网站链接分享给别人。\n",
    "zh/发布/自定义域名.md": "# 自定义域名\n\n你可以为网站设置自定义域名。先在域名服务商处添加一条"
                           "记录，再回到设置中填写域名。\n",
    "zh/同步/同步笔记.md": "# 同步笔记\n\n同步服务会在你的所有设备之间同步笔记、附件和设置。"
                         "打开设置，登录账户，选择要同步的仓库。\n",
    "zh/插件/模板.md": "# 模板\n\n模板插件可以把预先写好的文本插入当前笔记。先指定模板文件夹，"
                      "再用命令面板插入模板。\n",
    "zh/界面/快捷键.md": "# 快捷键\n\n在设置的快捷键页面中，可以为任何命令更改或添加快捷键。\n",
    "ja/リンク/ファイルの埋め込み.md": "# ファイルの埋め込み\n\n別のノートにノートを埋め込むには、"
                                   "内部リンクの前に ! を付けます。画像や PDF も同じように"
                                   "埋め込むことができます。\n",
    "ja/はじめに/ノートを同期する.md": "# デバイス間でノートを同期する\n\nノートを同期するには、"
                                   "各デバイスで同じ保管庫を開き、同期サービスにログインします。\n",
    "ja/プラグイン/テンプレート.md": "# テンプレート\n\nテンプレートを使うと、定型の文章を"
                                  "ノートに挿入できます。テンプレートフォルダを設定してください。\n",
    "en/publish.md": "# Publish\n\nPublish your notes to a website and share the link.\n",
    "en/sync.md": "# Sync\n\nSync keeps your notes the same on every device.\n",
}

#: Questions typed as sentences, and the note that answers each.
QUESTIONS = [
    ("如何发布网站", "zh/发布/开始发布.md"),
    ("怎么同步笔记", "zh/同步/同步笔记.md"),
    ("如何更改快捷键", "zh/界面/快捷键.md"),
    ("怎样使用模板插件", "zh/插件/模板.md"),
    ("自定义域名怎么设置", "zh/发布/自定义域名.md"),
    ("ノートを埋め込む方法", "ja/リンク/ファイルの埋め込み.md"),
    ("デバイス間でノートを同期するには", "ja/はじめに/ノートを同期する.md"),
    ("テンプレートの使い方", "ja/プラグイン/テンプレート.md"),
]


@pytest.fixture
async def help_vault(tmp_path: Path) -> Any:
    root = tmp_path / "help"
    for name, text in HELP.items():
        write(root, name, text)
    async with Rifflux(tmp_path / "help.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
        yield rf


@pytest.mark.parametrize(("question", "note"), QUESTIONS, ids=[q for q, _ in QUESTIONS])
async def test_a_cjk_question_typed_as_a_sentence_finds_the_note_holding_its_words(
    help_vault: Rifflux, question: str, note: str
) -> None:
    lexical = await help_vault.search(question, mode="lexical")
    assert lexical and lexical[0]["path"] == note, [h["path"] for h in lexical]
    assert "**" in lexical[0]["snippet"]  # the words inside the sentence are marked
    hybrid = await help_vault.search(question)
    assert any(h["score_breakdown"].get("lexical_rank") == 1 and h["path"] == note
               for h in hybrid)


async def test_short_cjk_words_and_quoted_phrases_are_found_only_as_written(
    help_vault: Rifflux
) -> None:
    assert [h["path"] for h in await help_vault.search("快捷键", mode="lexical")] \
        == ["zh/界面/快捷键.md"]
    assert await help_vault.search("网站发", mode="lexical") == []  # 网站 and 发布, not 网站发
    # the sentence finds the page; quoted, it must occur as written, and does not
    assert await help_vault.search("发布网站", mode="lexical")
    assert await help_vault.search('"发布网站"', mode="lexical") == []
    assert await help_vault.search('"发布服务"', mode="lexical")


async def test_a_cjk_sentence_that_only_means_something_is_not_blamed_on_spelling(
    help_vault: Rifflux
) -> None:
    query = "烹饪晚餐的食谱"  # no note holds any of its words
    hits = await help_vault.search(query)
    assert hits and all(h["score_breakdown"].get("lexical_rank") is None for h in hits)
    assert await why(help_vault, query, "hybrid", hits, {}) == "meaning only, sentence"
    misspelt = await help_vault.search("snyc")
    assert await why(help_vault, "snyc", "hybrid", misspelt, {}) == "meaning only"
    assert "spelling" not in MCP_WORDS.why["meaning only, sentence"]


#: A short English page about Python, and a longer Chinese tutorial that mentions both
#: words of ``Python 教程`` once (with other notes, so that both words are rare).
MIXED = {
    "en/python.md": "# Python scripts\n\nRun Python scripts against your vault. Python reads "
                    "the markdown files directly, so keep a backup.\n",
    "zh/自动化.md": "# 自动化笔记\n\n本教程介绍如何用 Python 批量整理你的笔记。你可以编写"
                   "脚本读取仓库中的 Markdown 文件，为每个文件添加标签，或者根据属性移动文件到"
                   "不同的文件夹。在运行脚本之前，请先备份你的仓库，因为脚本会直接修改文件内容。"
                   "完成后重新打开应用，就能看到整理好的笔记。\n",
    **{f"en/other{i}.md": f"# Other {i}\n\nNotes about gardening, topic {i}.\n"
       for i in range(4)},
    **{f"zh/其他{i}.md": f"# 其他 {i}\n\n关于园艺的笔记，第 {i} 篇。\n" for i in range(4)},
}


async def test_a_note_with_every_word_of_a_mixed_query_ranks_above_one_with_some(
    db: Location, tmp_path: Path
) -> None:
    root = tmp_path / "mixed"
    for name, text in MIXED.items():
        write(root, name, text)
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
        for query in ("Python 教程", "Python教程", "教程 Python"):
            found = [h["path"] for h in await rf.search(query, mode="lexical")]
            assert found[:2] == ["zh/自动化.md", "en/python.md"], query
            filtered = await rf.search(query, mode="lexical", paths=["en/**", "zh/**"])
            assert [h["path"] for h in filtered] == found, query  # filtered alike
        # one word: the page about it first, as before
        assert [h["path"] for h in await rf.search("Python", mode="lexical")][0] \
            == "en/python.md"


async def test_every_word_of_a_mixed_query_ranks_first_whatever_the_bm25_of_the_others(
    db: Location, tmp_path: Path
) -> None:
    # short notes dense in one word of the query outscore, by BM25, the long tutorial
    # holding both: more of them than a search reads of the best-scored chunks at first
    root = tmp_path / "mixed"
    for name, text in MIXED.items():
        write(root, name, text)
    for i in range(130):
        write(root, f"en/py{i}.md", f"# Note {i}\n\nPython, Python and Python.\n")
        write(root, f"zh/教{i}.md", f"# 笔记 {i}\n\n教程，教程，教程。\n")
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
        for query in ("Python 教程", "教程 Python"):
            hits = await rf.search(query, mode="lexical", top_k=5)
            assert [h["path"] for h in hits][0] == "zh/自动化.md", query
            # (the test means something: the others score better; lower is better)
            assert len(hits) == 5 and all(bm25(h) < bm25(hits[0]) for h in hits[1:]), query
