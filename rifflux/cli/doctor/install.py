"""The install: Rifflux's version, the Python running it, and the packages it needs."""

from __future__ import annotations

import re
import sys
from importlib.metadata import PackageNotFoundError, requires, version

from .checks import Check, attention, ok

__all__ = ["check_install"]

#: The oldest Python Rifflux runs on (pyproject.toml's requires-python).
_PYTHON = (3, 11)
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def check_install() -> Check:
    python = ".".join(map(str, sys.version_info[:3]))
    try:
        mine = version("rifflux")
    except PackageNotFoundError:
        return attention("install", f"rifflux is not installed for {sys.executable} (Python "
                         f"{python}): it runs from a source tree",
                         fix="install it: pip install -e . in the checkout (or pip install "
                             "rifflux), so that its packages and console scripts are there")
    if sys.version_info[:2] < _PYTHON:
        return attention("install", f"Python {python} is older than Rifflux needs",
                         fix=f"use Python {'.'.join(map(str, _PYTHON))} or later")
    missing, found = [], 0
    for requirement in requires("rifflux") or []:
        if "extra ==" in requirement or not _applies(requirement):
            continue
        name = _NAME.match(requirement)
        if name is None:
            continue
        try:
            version(name[1])
            found += 1
        except PackageNotFoundError:
            missing.append(name[1])
    summary = f"rifflux {mine}, Python {python} ({sys.executable})"
    if missing:
        return attention("install", summary, f"missing: {', '.join(missing)}",
                         fix=f"{sys.executable} -m pip install {' '.join(missing)} (or "
                             "install Rifflux again)", missing=missing)
    return ok("install", summary, f"all {found} packages it needs are installed",
              version=mine, python=python)


def _applies(requirement: str) -> bool:
    """Whether a requirement's environment marker holds here (one for another platform:
    uvloop off Windows)."""
    if ";" not in requirement:
        return True
    marker = requirement.split(";", 1)[1].strip()
    found = re.fullmatch(r"sys_platform\s*(==|!=)\s*['\"]([^'\"]+)['\"]", marker)
    if found is None:
        return True  # (another kind of marker: checked, as pip would likely install it)
    return (sys.platform == found[2]) == (found[1] == "==")
