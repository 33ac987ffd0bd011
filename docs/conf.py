"""Sphinx configuration of oltplab's documentation: Markdown pages (MyST), the Furo theme."""

project = "oltplab"
author = "the oltplab authors"
copyright = "2026, the oltplab authors"

extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build", "_generated", "requirements.txt"]
html_theme = "furo"
html_title = "oltplab"
# Headings become link targets, so pages can point at a section of another.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "deflist"]
# A link to a page or heading that does not exist is an error, not an external link.
nitpicky = True
