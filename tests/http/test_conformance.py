"""The MCP conformance suite's server scenarios against a real ``rifflux serve``'s /mcp:
every scenario passes but those the baseline lists, each with its reason
(``tests/conformance/expected-failures.yaml``: the suite's own fixtures, which only its
reference server has, and two optional capabilities). npx fetches the suite from the npm
registry the first time; nothing else is reached."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ..helpers import REPO, write_all
from ..serving import serving, until

SUITE = "@modelcontextprotocol/conformance@0.1.12"
BASELINE = REPO / "tests" / "conformance" / "expected-failures.yaml"


@pytest.mark.slow
def test_the_conformance_suite_passes_but_for_its_own_fixtures(tmp_path: Path) -> None:
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("npx (Node.js) is not installed: the conformance suite runs on it")
    kb = write_all(tmp_path / "kb", {f"n{i}.md": f"# Note {i}\n\nherons wade {i}\n"
                                     for i in range(3)})
    with serving(tmp_path / "index.db", "--watch", str(kb)) as served:
        import httpx2

        with httpx2.Client(base_url=served.url, timeout=30) as http:
            until(lambda: http.get("/api/status").json()["files"] == 3, within=60)
        done = subprocess.run(
            [npx, "-y", SUITE, "server", "--url", served.mcp, "--expected-failures",
             str(BASELINE), "-o", str(tmp_path / "results")],
            capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path)
    summary = done.stdout[done.stdout.find("=== SUMMARY ==="):]
    assert done.returncode == 0, summary + done.stderr[-2000:]
    assert "Baseline check passed: all failures are expected." in done.stdout
    for scenario in ("server-initialize", "tools-list", "tools-call-error", "resources-list",
                     "prompts-list", "dns-rebinding-protection"):
        assert f"✓ {scenario}:" in summary, summary
