"""Plugins: modules outside oltplab that register what they add (an engine family, say) when
imported. The command line imports them at its start, after the built-in families and
before any command reads a spec, so a spec may name what a plugin registers whichever
command reads it.

Two ways to name a plugin:

* an installed package declares an entry point in the group `oltplab.plugins`; the module
  it names is imported. In the package's pyproject.toml:

      [project.entry-points."oltplab.plugins"]
      toy = "toy_family"

* the environment variable `OLTPLAB_PLUGINS` lists modules, separated by commas, for one
  not installed as a package: `OLTPLAB_PLUGINS=tests.toys.toy_family oltplab run ...`
  (each must be importable: on PYTHONPATH, or installed).

A plugin registers as the built-in ones do, at its import: a family module ends with
`register(ToyFamily)` (engines/families.py); tests/toys/toy_family.py is one.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from functools import partial
from importlib.metadata import entry_points

from oltplab.base.errors import OltplabError

PLUGINS_ENV = "OLTPLAB_PLUGINS"
ENTRY_POINT_GROUP = "oltplab.plugins"


def load_plugins() -> None:
    """Imports the built-in families, then every plugin: installed ones first, then those
    the environment names."""
    # A plugin's family may subclass a built-in one, and the spec's names come from here.
    importlib.import_module("oltplab.engines.families")
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        _loaded(f"entry point {entry.name} = {entry.value}", entry.load)
    for name in filter(None, (n.strip() for n in os.environ.get(PLUGINS_ENV, "").split(","))):
        _loaded(f"{PLUGINS_ENV}: {name}", partial(importlib.import_module, name))


def _loaded(plugin: str, load: Callable[[], object]) -> None:
    try:
        load()
    except Exception as exc:
        # The plugin's own error, not oltplab's: named, with --debug for its traceback.
        raise OltplabError(
            f"plugin {plugin}: cannot import it: {type(exc).__name__}: {exc} (run again with "
            "--debug for the traceback)"
        ) from exc
