"""A repository's commits read with the ``git`` executable, streamed.

Chosen by measurement (``python -m benchmarks --sections history``): one ``git log
--raw -p -U0`` in a subprocess writes every commit with its changed paths and hunks,
and this module cuts the stream on the NUL bytes of its format (``bytes.split`` and
``bytes.find`` in C, a line at a time only within a commit's budget), so that reading
costs about what git's own writing does. pygit2 (libgit2's diff, an object per
patch and line) and dulwich (pure Python diffs) were not installed; both diff
inside this process, under the GIL, where git diffs beside it in its own process.

Standard library only, synchronous: ``read_commits`` is run in a worker thread.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

#: One commit's header, each field ended by NUL; its raw lines and patch follow.
_FIELDS = ("%H", "%P", "%an", "%ae", "%at", "%cn", "%ce", "%ct", "%B")
_FORMAT = "--format=%x00" + "%x00".join(_FIELDS) + "%x00"
_PER_COMMIT = len(_FIELDS) + 1  # (the header's fields, then the raw lines and patch)
#: git's options: paths as they are (not octal-quoted), renames found, no colour, no
#: external diff or text conversion a user's configuration may name.
_LOG = ("-c", "core.quotepath=off", "-c", "log.showSignature=false", "log", _FORMAT,
        "--raw", "-p", "-U0", "-M", "--no-color", "--no-ext-diff", "--no-textconv",
        "--encoding=UTF-8")
_HUNK = re.compile(rb"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@", re.MULTILINE)
_CHANGES = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed", "C": "copied",
            "T": "type changed"}
#: The longest line of a change kept in a commit's summary.
LINE_CHARS = 240
#: A commit's raw lines and patch beyond this are not kept in memory (its summary is cut
#: far earlier; what is beyond it is read and dropped).
_ITEM_BYTES = 8 * 1024 * 1024


class GitError(Exception):
    """git failed (not installed, not a repository, a damaged object store): what it said."""


@dataclass(frozen=True, slots=True)
class ChangedPath:
    path: str
    change: str  # added, modified, deleted, renamed, copied, type changed
    old_path: str | None = None
    added: int = 0
    removed: int = 0
    binary: bool = False


@dataclass(frozen=True, slots=True)
class RawCommit:
    hash: str
    parents: tuple[str, ...]
    author_name: str
    author_email: str
    author_time: int
    committer_name: str
    committer_email: str
    commit_time: int
    message: str
    paths: tuple[ChangedPath, ...]
    #: The change as the summary keeps it: per file, its path, hunk headers and the
    #: lines added and removed, cut at the budget.
    summary: str
    cut: bool = False


def git(repo: Path, *args: str, input: bytes | None = None, timeout: float = 60) -> bytes:
    """Run git in ``repo``; its stdout, or a GitError with its last words."""
    try:
        done = subprocess.run(["git", "-C", str(repo), *args], input=input,
                              capture_output=True, timeout=timeout, check=False)
    except FileNotFoundError as exc:
        raise GitError("the git executable is not installed (history needs it)") from exc
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"git {args[0]} took longer than {timeout:.0f} s") from exc
    if done.returncode != 0:
        raise GitError(_said(done.stderr) or f"git {args[0]} failed ({done.returncode})")
    return done.stdout


def _said(stderr: bytes) -> str:
    lines = [ln for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    return "; ".join(lines[-3:])


def read_commits(repo: Path, revisions: Sequence[str], *, budget: int,
                 no_walk: bool = False, batch: int = 256) -> Iterator[list[RawCommit]]:
    """The commits ``revisions`` name (``git log`` arguments, given on stdin: tips and
    ``^excluded`` ones; with ``no_walk``, exactly those commits), in batches. The summary
    of each is cut at ``budget`` characters. Raises GitError when git fails (after the
    batches read before it)."""
    args = ["git", "-C", str(repo), *_LOG, "--stdin"]
    if no_walk:
        args.append("--no-walk=unsorted")
    try:
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, bufsize=0)
    except FileNotFoundError as exc:
        raise GitError("the git executable is not installed (history needs it)") from exc
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        # git reads every revision before it writes a byte
        proc.stdin.write("".join(f"{r}\n" for r in revisions).encode())
        proc.stdin.close()
        out: list[RawCommit] = []
        for fields in _items(proc.stdout):
            out.append(_commit(fields, budget))
            if len(out) >= batch:
                yield out
                out = []
        if out:
            yield out
        code = proc.wait()
        if code != 0:
            raise GitError(_said(proc.stderr.read()) or f"git log failed ({code})")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def _items(stream: object) -> Iterator[list[bytes]]:
    """The stream cut into each commit's fields (the last: its raw lines and patch,
    kept up to ``_ITEM_BYTES``)."""
    read = stream.read  # type: ignore[attr-defined]
    pending: list[bytes] = []
    size = 0
    fields: list[bytes] = []
    first = True
    while block := read(1 << 20):
        pieces = block.split(b"\0")
        for i, piece in enumerate(pieces):
            if size < _ITEM_BYTES:
                pending.append(piece)
                size += len(piece)
            if i == len(pieces) - 1:
                break  # (continues in the next block)
            item, pending, size = b"".join(pending), [], 0
            if first:  # (what precedes the first commit: nothing)
                first = False
                continue
            fields.append(item)
            if len(fields) == _PER_COMMIT:
                yield fields
                fields = []
    if not first:
        fields.append(b"".join(pending))
        if len(fields) == _PER_COMMIT:
            yield fields


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _commit(fields: list[bytes], budget: int) -> RawCommit:
    h, parents, an, ae, at, cn, ce, ct, message, rest = fields
    paths, summary, cut = _changes(rest, budget)
    return RawCommit(
        hash=h.decode("ascii"), parents=tuple(parents.decode("ascii").split()),
        author_name=_text(an), author_email=_text(ae), author_time=int(at or 0),
        committer_name=_text(cn), committer_email=_text(ce), commit_time=int(ct or 0),
        message=_text(message).strip(), paths=paths, summary=summary, cut=cut)


@dataclass(slots=True)
class _File:
    path: str
    change: str
    old_path: str | None
    added: int = 0
    removed: int = 0
    binary: bool = False
    lines: list[str] = field(default_factory=list)


def _changes(rest: bytes, budget: int) -> tuple[tuple[ChangedPath, ...], str, bool]:
    """The raw lines (paths and how each changed) and the patch after them: each file's
    counts (from its hunk headers, all of them) and its summary (within ``budget``)."""
    start = rest.find(b"\ndiff --git ")
    raw = rest if start < 0 else rest[:start]
    files = [f for line in raw.split(b"\n") if line.startswith(b":")
             if (f := _raw_line(line)) is not None]
    if start < 0:
        return tuple(_path(f) for f in files), "", False
    sections = rest[start + 1:].split(b"\ndiff --git ")
    left = budget
    cut = False
    out: list[str] = []
    for f, section in zip(files, sections, strict=False):
        at = section.find(b"\n@@ ")
        if at < 0:
            f.binary = b"\nBinary files " in section or section.startswith(b"Binary files")
            if f.binary and left > 0:
                line = f"{f.path} (binary)"
                out.append(line)
                left -= len(line) + 1
            continue
        body = section[at + 1:]
        for m in _HUNK.finditer(body):
            f.removed += 1 if m.group(1) is None else int(m.group(1))
            f.added += 1 if m.group(2) is None else int(m.group(2))
        if left <= 0:
            cut = True
            continue
        out.append(f.path)
        left -= len(f.path) + 1
        end = 0
        while left > 0 and end < len(body):
            nl = body.find(b"\n", end)
            nl = len(body) if nl < 0 else nl
            raw = body[end:min(nl, end + LINE_CHARS * 4)]
            end = nl + 1
            if raw[:1] in (b"+", b"-", b"@"):
                text = _text(raw)[:LINE_CHARS]
                out.append(text)
                left -= len(text) + 1
        if end < len(body):
            cut = True
    if len(sections) > len(files) or left < 0:
        cut = True
    return tuple(_path(f) for f in files), "\n".join(out), cut


def _path(f: _File) -> ChangedPath:
    return ChangedPath(path=f.path, change=f.change, old_path=f.old_path, added=f.added,
                       removed=f.removed, binary=f.binary)


def _raw_line(line: bytes) -> _File | None:
    """``:100644 100644 abc def M\\tpath`` (``R090\\told\\tnew`` for a rename)."""
    head, _, names = line.partition(b"\t")
    parts = head.split()
    if len(parts) < 5 or not names:
        return None
    status = parts[4][:1].decode("ascii", "replace")
    paths = [unquote(p) for p in names.split(b"\t")]
    change = _CHANGES.get(status, "modified")
    if status in ("R", "C") and len(paths) == 2:
        return _File(path=paths[1], change=change, old_path=paths[0])
    return _File(path=paths[0], change=change, old_path=None)


_ESCAPES = {b"n": b"\n", b"t": b"\t", b'"': b'"', b"\\": b"\\", b"a": b"\a", b"b": b"\b",
            b"f": b"\f", b"r": b"\r", b"v": b"\v"}


def unquote(raw: bytes) -> str:
    """A path as git writes it: as it is, or C-quoted when it holds a quote, a backslash
    or a control character (octal escapes are bytes: a path not in UTF-8 keeps them as
    replacement characters)."""
    if not (raw.startswith(b'"') and raw.endswith(b'"') and len(raw) >= 2):
        return _text(raw)
    out = bytearray()
    body, i = raw[1:-1], 0
    while i < len(body):
        c = body[i:i + 1]
        if c == b"\\" and i + 1 < len(body):
            nxt = body[i + 1:i + 2]
            if nxt.isdigit() and i + 4 <= len(body):
                out.append(int(body[i + 1:i + 4], 8) & 0xFF)
                i += 4
                continue
            out += _ESCAPES.get(nxt, nxt)
            i += 2
            continue
        out += c
        i += 1
    return _text(bytes(out))
