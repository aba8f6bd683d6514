"""Each MCP client's configuration, as ``rifflux setup --list`` sees it."""

from __future__ import annotations

from ..setup.clients import Place
from ..setup.states import client_states
from .checks import Check, attention, note, ok

__all__ = ["check_clients"]


def check_clients(place: Place) -> list[Check]:
    checks: list[Check] = []
    states = client_states(place)
    for state in states:
        key, name, path = state.client.key, state.client.name, state.path
        if state.problem:
            checks.append(attention("client", f"{name}: {state.problem}",
                                    fix=f"fix {path}, then rifflux setup {key}", client=key))
        elif state.stale:
            checks.append(attention("client", f"{name}: the rifflux entry in {path} is "
                                    "broken", state.stale, fix=f"rifflux setup {key}",
                                    client=key))
        elif state.configured:
            checks.append(ok("client", f"{name} runs {state.runs}",
                             *((state.note,) if state.note else ()), client=key))
        elif state.installed:
            checks.append(note("client", f"{name} is here, without Rifflux ({path})",
                               fix=f"rifflux setup {key}", client=key))
    if not any(s.configured for s in states):
        checks.append(note("client", "no MCP client runs Rifflux yet",
                           fix="rifflux setup CLIENT (rifflux setup --list names them)"))
    return checks
