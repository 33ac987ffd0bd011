"""Headless Chromium driven by Playwright, offline but for loopback and files."""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
# Every browser the tests start is offline but for loopback. Left to itself, a headless
# Chromium reaches its vendor's time and update hosts; the switches below stop the
# services that ask, and the resolver rule refuses every other host name and address
# (IP literals go through it too) before a socket is opened, so nothing can leave.
LOOPBACK_ONLY = "MAP * ~NOTFOUND , EXCLUDE localhost , EXCLUDE 127.0.0.1 , EXCLUDE ::1"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-default-apps",
    "--disable-breakpad",
    "--no-pings",
    "--no-first-run",
    "--disable-sync",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    f"--host-resolver-rules={LOOPBACK_ONLY}",
]


# A page that fails to resolve a name would otherwise send DNS probes of its own, to the
# host's resolver and to a public one, to say why (Chromium's DnsProbeService, which the
# resolver rule does not cover); the "alternate error pages" preference turns them off.
PREFERENCES = {"alternate_error_pages": {"enabled": False}}


@contextlib.contextmanager
def browser_page() -> Iterator[tuple[Any, list[str]]]:
    """A page of a fresh browser, and the errors it logs (console, page, dialogs)."""
    playwright_api = pytest.importorskip("playwright.sync_api")
    with tempfile.TemporaryDirectory(prefix="oltplab-browser-") as profile:
        (Path(profile) / "Default").mkdir()
        (Path(profile) / "Default" / "Preferences").write_text(json.dumps(PREFERENCES))
        with playwright_api.sync_playwright() as playwright:
            context = playwright.chromium.launch_persistent_context(
                profile,
                executable_path=CHROMIUM,
                args=ARGS,
                viewport={"width": 1300, "height": 1000},
            )
            page = context.pages[0] if context.pages else context.new_page()
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
            try:
                yield page, errors
            finally:
                context.close()


def requests_beyond_files(page) -> list[str]:
    """Every request the page makes other than for a file, refused and listed (the page is
    offline: the list must stay empty)."""
    requested: list[str] = []

    def only_files(route) -> None:
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            requested.append(route.request.url)
            route.abort()

    page.route("**/*", only_files)
    return requested


# The tallest vertical run of a page with nothing painted in it: text, images, charts'
# drawing and form controls count; an empty box (a chart not drawn yet) does not.
WIDEST_BLANK = """() => {
  const drawn = new Set(["IMG", "svg", "CANVAS", "INPUT", "SELECT", "path", "text", "rect"]);
  const boxes = [...document.querySelectorAll("body *")].filter(e => {
    const r = e.getBoundingClientRect(), s = getComputedStyle(e);
    if (!r.width || !r.height || s.visibility === "hidden") return false;
    return drawn.has(e.tagName) ||
      [...e.childNodes].some(n => n.nodeType === Node.TEXT_NODE && n.textContent.trim());
  }).map(e => {
    const r = e.getBoundingClientRect();
    return [r.top + window.scrollY, r.bottom + window.scrollY];
  }).filter(([, bottom]) => bottom > 0).sort((a, b) => a[0] - b[0]);  // none off the page
  let end = 0, widest = 0, at = 0;
  for (const [top, bottom] of boxes) {
    if (top - end > widest) { widest = top - end; at = end; }
    end = Math.max(end, bottom);
  }
  return [widest, at];
}"""


def widest_blank(page) -> tuple[float, float]:
    """The page's tallest blank band, in CSS pixels, and where it starts."""
    widest, at = page.evaluate(WIDEST_BLANK)
    return float(widest), float(at)
