"""Plugins: modules outside oltplab that register what they add (an engine family, a
scheduler, a telemetry device, a workload kind, an order) with their own registration line
when imported. They are imported here, at the command line's start, after the built-in
families and kinds and before any argument is parsed, so a spec naming a plugin's family or
kind, or `submit` naming its scheduler, finds it whichever command reads it. An installed
package names its module by an entry point in the group `oltplab.plugins`; `OLTPLAB_PLUGINS`
lists others (docs/contributing.md: plugins)."""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable
from functools import partial
from importlib.metadata import entry_points

from oltplab.base.errors import OltplabError

PLUGINS_ENV = "OLTPLAB_PLUGINS"
ENTRY_POINT_GROUP = "oltplab.plugins"


def load_plugins() -> None:
    """Imports the built-in families and workload kinds, then every plugin: the installed
    ones first (by entry point name), then those the environment names, in its order."""
    # A plugin's family or kind may subclass a built-in one, and the spec's names come
    # from here.
    importlib.import_module("oltplab.engines.families")
    importlib.import_module("oltplab.workloads.kinds")
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        _imported(point.value, f"entry point {point.name} of {ENTRY_POINT_GROUP}", point.load)
    for name in re.split(r"[,\s]+", os.environ.get(PLUGINS_ENV, "").strip()):
        if name:
            _imported(name, PLUGINS_ENV, partial(importlib.import_module, name))


def _imported(name: str, where: str, load: Callable[[], object]) -> None:
    try:
        load()
    except Exception as exc:
        # The plugin's own error, not oltplab's: named, with --debug for its traceback.
        raise OltplabError(
            f"plugin {name} ({where}) could not be imported: {type(exc).__name__}: {exc} "
            "(run again with --debug for the traceback)"
        ) from exc
