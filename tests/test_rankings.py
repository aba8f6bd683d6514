"""Rankings a user can trust: a text several chunks hold comes back once, naming its
other places; the first hits do not depend on how many were asked for; and a branch
whose list is noise for the query (the bundled English model's, for a Chinese or
Japanese question) does not bury the other branch's clear winner."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from rifflux import Rifflux
from rifflux.core.embedders import BUNDLED_MODEL
from rifflux.types import SearchResult

from .helpers import CountingEmbedder, Location, bm25, write, write_all

pytestmark = pytest.mark.anyio

#: One section copied into four notes (a cookbook in four languages), and notes of
#: their own around it.
REPORT = ("## Example scenario\n\nYou want to audit a website's accessibility: the tool "
          "opens the page, reads its accessibility tree and writes a report.\n")
COPIES = {
    **{f"cookbook/{lang}/accessibility-report.md":
       "# Accessibility reports\n\n" + REPORT
       + f"\n## Full example\n\nThe whole report tool, built with the {lang} SDK.\n"
       for lang in ("python", "dotnet", "go", "nodejs")},
    "guides/audit.md": "# Audits\n\nAn accessibility audit checks contrast and labels.\n",
    "guides/report.md": "# Reports\n\nA report lists what the audit found, page by page.\n",
}


def texts(hits: list[SearchResult]) -> list[tuple[str, str]]:
    return [(h["heading_path"], h.get("content", "")) for h in hits]


@pytest.mark.parametrize("mode", ["hybrid", "lexical", "semantic"])
async def test_copies_of_one_text_are_one_hit_that_names_the_other_places(
    db: Location, tmp_path: Path, mode: str
) -> None:
    root = write_all(tmp_path / "notes", COPIES)
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
        hits = await rf.search("accessibility audit report scenario", top_k=6, mode=mode)
        every = await rf.search("accessibility audit report scenario", top_k=20, mode=mode,
                                duplicates="all")
    # six distinct texts (of the seven there are): the copies took one place, not four
    assert len(hits) == 6 and len(set(texts(hits))) == 6
    scenario = [h for h in hits if h["heading_path"].endswith("Example scenario")]
    assert len(scenario) == 1
    kept = scenario[0]
    # the copy kept is the first of the equal ones by path; the others are named, by path
    assert kept["path"] == "cookbook/dotnet/accessibility-report.md"
    assert [(p["path"], p["line_start"], p["root"]) for p in kept["also_in"]] == [
        (f"cookbook/{lang}/accessibility-report.md", kept["line_start"], str(root))
        for lang in ("go", "nodejs", "python")]
    assert kept["also_in_count"] == 3
    assert all("also_in" not in h for h in hits if h is not kept)
    # duplicates="all": every copy, as before, none naming the others
    copies = [h for h in every if h["heading_path"].endswith("Example scenario")]
    assert len(copies) == 4 and all("also_in" not in h for h in every)


async def test_the_other_places_are_those_within_the_search_filters(
    db: Location, tmp_path: Path
) -> None:
    root = write_all(tmp_path / "notes", COPIES)
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
        hits = await rf.search("example scenario", paths=["cookbook/go/**", "cookbook/p*/**"])
    kept = next(h for h in hits if h["heading_path"].endswith("Example scenario"))
    assert kept["path"] == "cookbook/go/accessibility-report.md"
    assert [p["path"] for p in kept["also_in"]] == ["cookbook/python/accessibility-report.md"]
    assert kept["also_in_count"] == 1


async def test_a_lexical_search_gives_top_k_texts_when_copies_fill_its_first_places(
    db: Location, tmp_path: Path
) -> None:
    notes = {f"copy{i}.md": "# Retry policy\n\nRetry twice, then give up.\n" for i in range(6)}
    notes |= {f"other{i}.md": f"# Note {i}\n\nA retry in passing, number {i}.\n"
              for i in range(4)}
    root = write_all(tmp_path / "notes", notes)
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
        hits = await rf.search("retry policy", top_k=3, mode="lexical")
    assert [h["path"] for h in hits][:1] == ["copy0.md"]
    assert len(hits) == 3 and len(set(texts(hits))) == 3
    assert hits[0]["also_in_count"] == 5
    assert bm25(hits[0]) < bm25(hits[1]) <= bm25(hits[2])  # the list goes on down the ranking


#: Words for notes that overlap on many of them, so that lists run deep.
_WORDS = ("river stone garden lantern harbor meadow orchard canyon glacier prairie "
          "willow falcon ember quartz cedar lagoon thistle basalt comet dune").split()


async def test_the_first_hits_do_not_depend_on_how_many_were_asked_for(
    db: Location, tmp_path: Path
) -> None:
    rng = random.Random(36)
    root = tmp_path / "notes"
    for i in range(150):
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(8, 40)))
        write(root, f"n{i:03}.md", f"# Note {i}\n\n{words}.\n")
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
        for query in ("river stone meadow", "river garden lantern", "river garden falcon"):
            firsts = {top_k: [h["chunk_id"] for h in await rf.search(query, top_k=top_k)][:5]
                      for top_k in (5, 10, 50)}
            assert firsts[5] == firsts[10] == firsts[50], query


#: A Japanese and a Chinese guide to the same subjects, one section each, and English
#: notes beside them: to the bundled English model a question in either script is close
#: to every section of its guide alike (its list is noise), while one section holds the
#: question's words.
JA_GUIDE = """# Web API 開発ガイド

## 全般
- 読みやすく保守しやすいコードを書くことを優先します。
- 各関数には目的を説明する短いコメントを書きます。
- 設計の判断には理由をコメントで残します。

## 命名規則
- クラス名とメソッド名には PascalCase を使用します。
- ローカル変数には camelCase を使用します。
- インターフェイス名には接頭辞 I を付けます。

## プロジェクト構成
- 新しいプロジェクトを作成する手順を説明します。
- フォルダ構成とそれぞれの目的を説明します。
- 機能ごとのフォルダによる整理方法を示します。

## データ アクセス
- データアクセス層の実装方法を説明します。
- リポジトリパターンを使う場面を示します。
- データベースのマイグレーションを実行する方法を示します。

## 認証
- トークンによる認証の実装を説明します。
- ロールに基づく認可の方法を示します。
- 外部の認証サービスとの連携を説明します。

## エラー処理
- 入力値の検証を実装する方法を説明します。
- 例外をまとめて処理するミドルウェアを示します。
- 一貫したエラー応答を返す方法を説明します。

## ロギング
- 構造化ログの実装を説明します。
- ログレベルの使い分けを示します。
- リクエストの追跡に使う識別子の実装方法を示します。

## テスト
- 重要な処理には必ずテストを書きます。
- 単体テストと統合テストの違いを説明します。
- 依存関係をモックする方法を示します。
- 認可ロジックをテストする方法を示します。

## パフォーマンス
- キャッシュの使い方を説明します。
- 非同期処理がなぜ重要かを説明します。
- 大きなデータをページングで返す方法を示します。

## デプロイ
- コンテナーを作成する手順を説明します。
- 継続的インテグレーションの設定方法を示します。
- クラウドへのデプロイ方法を説明します。
"""
ZH_GUIDE = """# Web API 开发指南

## 总体原则
- 优先编写易读、易维护的代码。
- 为每个函数写一段说明用途的简短注释。
- 在注释中记录设计决定的理由。

## 命名规范
- 类名和方法名使用 PascalCase。
- 局部变量使用 camelCase。
- 接口名以字母 I 开头。

## 项目结构
- 说明创建新项目的步骤。
- 说明每个文件夹的用途。
- 介绍按功能组织文件夹的方法。

## 数据访问
- 说明如何实现数据访问层。
- 介绍何时使用仓储模式。
- 说明如何执行数据库迁移。

## 身份验证
- 说明如何使用令牌实现身份验证。
- 介绍基于角色的授权方法。
- 说明如何与外部身份服务集成。

## 错误处理
- 说明如何实现输入验证。
- 介绍统一处理异常的中间件。
- 说明如何返回一致的错误响应。

## 日志记录
- 说明如何实现结构化日志。
- 介绍各个日志级别的用法。
- 说明如何为请求添加追踪标识。

## 测试
- 关键代码必须编写测试。
- 说明单元测试和集成测试的区别。
- 介绍如何模拟依赖项。
- 说明如何测试授权逻辑。

## 性能
- 说明如何使用缓存。
- 解释异步处理为什么重要。
- 介绍如何分页返回大量数据。

## 部署
- 说明创建容器的步骤。
- 介绍持续集成的配置方法。
- 说明如何部署到云端。
"""
GUIDES = {
    "ja/guide.md": JA_GUIDE, "zh/guide.md": ZH_GUIDE,
    **{f"en/{name}.md": f"# {name.title()}\n\n{text}\n" for name, text in {
        "testing": "Write unit tests for important code paths and mock dependencies.",
        "logging": "Use structured logging with levels and correlation ids.",
        "deploy": "Build a container image and deploy it to the cloud with CI.",
        "auth": "Authenticate with tokens and authorize by role.",
    }.items()},
}


@pytest.mark.parametrize(("question", "section"), [
    ("機能ごとのフォルダによる整理方法", "Web API 開発ガイド > プロジェクト構成"),
    ("如何创建容器", "Web API 开发指南 > 部署"),
])
async def test_a_cjk_question_keeps_its_clear_lexical_winner_in_the_hybrid_top_3(
    db: Location, tmp_path: Path, question: str, section: str
) -> None:
    root = write_all(tmp_path / "guides", GUIDES)
    async with Rifflux(db, embedding_backend="onnx") as rf:
        done = await rf.reindex(root)
        assert done["embedding_model"] == BUNDLED_MODEL  # the bundled English model
        lexical = await rf.search(question, mode="lexical", top_k=2)
        hybrid = await rf.search(question, top_k=10)
    # the section holding the question's words is lexical's clear winner: twice the next
    assert lexical[0]["heading_path"] == section
    assert bm25(lexical[0]) <= 2 * bm25(lexical[1])  # (bm25: lower is better)
    assert section in [h["heading_path"] for h in hybrid[:3]], texts(hybrid)
