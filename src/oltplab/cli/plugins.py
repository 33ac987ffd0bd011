"""Extensions outside oltplab: modules that register a family, a scheduler or a device with
their own registration line, imported when the command line starts, before any argument is
parsed (so a spec naming a plugin's family, or `submit` naming its scheduler, finds it).

A plugin is named by an installed package's entry point in the `oltplab.plugins` group, or
in the OLTPLAB_PLUGINS environment variable (module names, separated by commas or spaces)."""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable
from functools import partial
from importlib.metadata import entry_points

from oltplab.base.errors import OltplabError

PLUGINS_ENV = "OLTPLAB_PLUGINS"
GROUP = "oltplab.plugins"


def load_plugins() -> None:
    """Import every plugin, the installed ones first (by entry point name), then those the
    environment names in its order; one that fails to import stops oltplab, named."""
    for point in sorted(entry_points(group=GROUP), key=lambda p: p.name):
        _imported(point.value, f"entry point {point.name} of {GROUP}", point.load)
    for name in re.split(r"[,\s]+", os.environ.get(PLUGINS_ENV, "").strip()):
        if name:
            _imported(name, PLUGINS_ENV, partial(importlib.import_module, name))


def _imported(name: str, where: str, load: Callable[[], object]) -> None:
    try:
        load()
    except Exception as exc:
        raise OltplabError(
            f"plugin {name} ({where}) could not be imported: {type(exc).__name__}: {exc}"
        ) from exc
