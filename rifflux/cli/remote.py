"""``rifflux search`` answered by a ``rifflux serve`` already running on the index.

The server has the index open, its catalog and vector matrix in memory and its
model loaded: asking it (``GET /api/search``, the answer shaped as ``rifflux
search --json``) takes a few milliseconds, where opening the index here and
loading the model takes a second. The server is found as ``rifflux mcp --connect
auto`` finds it (``rifflux.discovery``: the file beside the index, a stale
one ignored). ``--no-server`` searches here; so does a search that names its own
model (``--backend``, ``--model-dir``, ``--embed-url``, ``--embed-model``) or fusion
(``--rrf-k``), since the server ranks with its own. When the server cannot answer (it
stopped, another token), the search runs here instead, and so does one whose arguments
it does not take (its bounds are the API's: ``top_k`` at most 100, where the command has
none; an argument wrong here too is then refused in the command's words); ``--verbose`` says which
happened.

Standard library only, like ``entry``: nothing of the library is imported on this
path (the results are printed by ``terminal``, which imports rich).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from ..config import Settings
from ..exits import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, fail
from .entry import CommandError, stdout_gone

__all__ = ["frontmatter_pairs", "search_on_server"]

#: Seconds to wait for the server (it answers searches in milliseconds; a server this
#: slow is busy, and the search runs here instead).
_TIMEOUT = 10.0


def search_on_server(args: argparse.Namespace, settings: Settings) -> int | None:
    """Search on the running server and print its answer: the exit code; None when no
    server runs or it cannot answer (search here)."""
    query = " ".join(args.query).strip()
    if not query:
        return None  # (the search here says what to give)
    try:
        found = _ask(args, settings, query, _nears(args.near) if args.near else [None])
        if found is None:
            return None
        _print(args, found)
    except CommandError as exc:
        return fail(str(exc), exc.code)
    except BrokenPipeError:  # the reader left (`| head -1`): done
        stdout_gone()
        return EXIT_OK
    return EXIT_OK if found.get("results") else EXIT_FAILURE


def _nears(path: str) -> list[str | None]:
    """What to send as ``near``, in the order the search here tries them
    (``common.note_path``): a file in the working directory (search prints paths relative
    to it) made absolute, then the path as given (relative to its indexed folder)."""
    local = Path(path).expanduser()
    if not local.is_absolute() and local.is_file():
        return [str(local.resolve()), path]
    return [path]


def _print(args: argparse.Namespace, answer: dict[str, Any]) -> None:
    """The answer as the search here prints it (hints in the server's words)."""
    if args.json:
        sys.stdout.write(json.dumps(answer, indent=2, ensure_ascii=False) + "\n")
        sys.stdout.flush()
    else:
        from .results import print_search

        print_search(answer["results"], answer.get("explain"))
    hint = answer.get("hint")
    if hint and sys.stderr is not None:
        empty = "no results: " if not answer.get("results") else ""
        sys.stderr.write(f"rifflux: {empty}{hint}\n")


def _ask(args: argparse.Namespace, settings: Settings, query: str,
         nears: list[str | None]) -> dict[str, Any] | None:
    """The server's answer, or None: search here. A ``near`` the server refuses (400: no
    such note) is followed by the next of ``nears``."""
    if args.no_server:
        _say(args, "searching here (--no-server)")
        return None
    own = [flag for flag, name in (("--backend", "backend"), ("--model-dir", "model_dir"),
                                   ("--embed-url", "embed_url"),
                                   ("--embed-model", "embed_model"),
                                   ("--rrf-k", "rrf_k"), ("--rerank", "rerank"),
                                   ("--rerank-url", "rerank_url"),
                                   ("--rerank-model", "rerank_model"),
                                   ("--rerank-depth", "rerank_depth"),
                                   ("--rerank-timeout", "rerank_timeout"))
            if getattr(args, name, None) is not None]
    if own:
        _say(args, f"searching here: {', '.join(own)} asks for a model or fusion of its own")
        return None
    if not isinstance(settings.db_path, Path):  # (a database has no file beside it)
        _say(args, "searching here: a server is found beside an index file, not a database")
        return None
    from .. import discovery

    running = discovery.find(settings.db_path, timeout=0.5)
    if running is None:
        _say(args, f"no rifflux serve runs on {settings.db_path}: searching here")
        return None
    url = urlsplit(running.url)
    if url.hostname is None:
        return None
    import http.client

    headers = {"Accept": "application/json"}
    if running.token:
        headers["Authorization"] = f"Bearer {running.token}"
    for near in nears:
        conn = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=_TIMEOUT)
        try:
            conn.request("GET", "/api/search?" + urlencode(_params(args, query, near),
                                                           doseq=True), headers=headers)
            response = conn.getresponse()
            body = response.read()
        except (OSError, http.client.HTTPException) as exc:
            _say(args, f"the server at {running.url} did not answer ({exc}): searching here")
            return None
        finally:
            conn.close()
        if response.status != 400 or near == nears[-1]:
            break
    if response.status == 400:  # (the server's bounds are not the command's: top_k, ...)
        _say(args, f"the server at {running.url} does not take these arguments "
                   f"({_message(body)}): searching here")
        return None
    if response.status != 200:
        _say(args, f"the server at {running.url} answered {response.status} "
                   f"({_message(body)}): searching here")
        return None
    _say(args, f"answered by rifflux serve at {running.url} (pid {running.pid})")
    answer: dict[str, Any] = json.loads(body)
    return answer


def _params(args: argparse.Namespace, query: str, near: str | None) -> list[tuple[str, Any]]:
    params: list[tuple[str, Any]] = [("q", query), ("mode", args.mode), ("top_k", args.top_k),
                                     ("content", "snippet" if args.snippets else "full")]
    if args.explain:
        params.append(("explain", "true"))
    if args.duplicates != "collapse":
        params.append(("duplicates", args.duplicates))
    if args.hypothesis is not None:
        params.append(("hypothesis", args.hypothesis))
    if args.rerank_search is not None:
        params.append(("rerank", "false"))
    for name, value in (("max_per_file", args.max_per_file), ("root", args.root),
                        ("modified_after", args.since), ("modified_before", args.before),
                        ("near", near), ("depth", args.depth)):
        if value is not None:
            params.append((name, value))
    params += [("paths", glob) for glob in args.path_globs or ()]
    params += [("tags", tag) for tag in args.tags or ()]
    params += [("kinds", kind) for kind in args.kinds or ()]
    params += [("lang", code) for code in args.lang or ()]
    if args.frontmatter:
        params.append(("frontmatter", json.dumps(frontmatter_pairs(args.frontmatter))))
    return params


def frontmatter_pairs(pairs: list[str] | None) -> dict[str, str | list[str]] | None:
    """``--frontmatter KEY=VALUE`` (repeatable) as the filter takes it: a key given twice
    needs both values (as the library's list of values does)."""
    if not pairs:
        return None
    values: dict[str, list[str]] = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key.strip():
            raise CommandError(f"--frontmatter {pair!r}: write KEY=VALUE, e.g. "
                               "--frontmatter status=draft", EXIT_USAGE)
        values.setdefault(key.strip(), []).append(value.strip())
    return {key: found[0] if len(found) == 1 else found for key, found in values.items()}


def _message(body: bytes) -> str:
    try:
        return str(json.loads(body)["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return body.decode("utf-8", errors="replace")[:200] or "no message"


def _say(args: argparse.Namespace, what: str) -> None:
    if args.verbose and sys.stderr is not None:
        sys.stderr.write(f"rifflux: {what}\n")
