"""The history's tables: the git repositories holding indexed folders, their commits as
documents (searched by FTS5 as chunks are, their vectors in ``embeddings`` by the hash
of their text, as chunks' are), and the paths each commit changed. Created with the
other tables when a writer opens the index: an older index gains them, nothing to
upgrade."""

from __future__ import annotations

HISTORY_SCHEMA = """
CREATE TABLE IF NOT EXISTS history_repos(
    id INTEGER PRIMARY KEY,
    git_dir TEXT NOT NULL UNIQUE,
    worktree TEXT NOT NULL,
    tips TEXT NOT NULL DEFAULT '[]',
    shallow INTEGER NOT NULL DEFAULT 0,
    problem TEXT,
    read_at REAL,
    commits INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS commits(
    id INTEGER PRIMARY KEY,
    repo_id INTEGER NOT NULL REFERENCES history_repos(id) ON DELETE CASCADE,
    hash TEXT NOT NULL,
    parents TEXT NOT NULL,
    author_name TEXT NOT NULL,
    author_email TEXT NOT NULL,
    author_time INTEGER NOT NULL,
    committer_name TEXT NOT NULL,
    committer_email TEXT NOT NULL,
    commit_time INTEGER NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    paths TEXT NOT NULL,
    summary TEXT NOT NULL,
    cut INTEGER NOT NULL DEFAULT 0,
    content_hash TEXT NOT NULL,
    UNIQUE(repo_id, hash)
);
CREATE INDEX IF NOT EXISTS commits_by_hash ON commits(hash);
CREATE INDEX IF NOT EXISTS commits_by_time ON commits(commit_time);
CREATE INDEX IF NOT EXISTS commits_by_text ON commits(content_hash);
CREATE TABLE IF NOT EXISTS commit_paths(
    commit_id INTEGER NOT NULL REFERENCES commits(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    old_path TEXT,
    change TEXT NOT NULL,
    added INTEGER NOT NULL DEFAULT 0,
    removed INTEGER NOT NULL DEFAULT 0,
    binary INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS commit_paths_by_path ON commit_paths(path, commit_id);
CREATE INDEX IF NOT EXISTS commit_paths_by_commit ON commit_paths(commit_id);
CREATE VIRTUAL TABLE IF NOT EXISTS commits_fts USING fts5(
    title, body, paths, summary, content='commits', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS commits_ai AFTER INSERT ON commits BEGIN
    INSERT INTO commits_fts(rowid, title, body, paths, summary)
    VALUES (new.id, new.title, new.body, new.paths, new.summary);
END;
CREATE TRIGGER IF NOT EXISTS commits_ad AFTER DELETE ON commits BEGIN
    INSERT INTO commits_fts(commits_fts, rowid, title, body, paths, summary)
    VALUES ('delete', old.id, old.title, old.body, old.paths, old.summary);
END;
"""
