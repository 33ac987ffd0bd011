"""A differential flame graph: the changed release's stacks, each frame as wide as its
samples per transaction, red where it costs more than in the last good release and blue
where it costs less; one self-contained HTML page (no script from anywhere else), with
the functions that gained the most listed beneath."""

from __future__ import annotations

import html
from dataclasses import dataclass, field

from oltplab.analysis.profiles import FunctionChange, Profile

ROW = 18  # pixels per frame
WIDTH = 1200


@dataclass
class _Node:
    name: str
    after: float = 0.0
    before: float = 0.0
    children: dict[str, _Node] = field(default_factory=dict)

    def child(self, name: str) -> _Node:
        return self.children.setdefault(name, _Node(name))


def _tree(before: Profile, after: Profile) -> _Node:
    root = _Node("all")
    for profile, attribute in ((after, "after"), (before, "before")):
        for stack, weight in profile.stacks.items():
            node = root
            setattr(node, attribute, getattr(node, attribute) + weight)
            for frame in stack.split(";"):
                node = node.child(frame)
                setattr(node, attribute, getattr(node, attribute) + weight)
    return root


def _colour(node: _Node) -> str:
    """Red for a frame that costs more per transaction, blue for one that costs less."""
    if node.before == 0:
        return "rgb(220,60,60)"
    change = max(-1.0, min(1.0, (node.after - node.before) / node.before))
    strength = int(200 * abs(change))
    if change >= 0:
        return f"rgb(240,{230 - strength},{230 - strength})"
    return f"rgb({230 - strength},{230 - strength},240)"


def _frames(root: _Node) -> list[str]:
    scale = WIDTH / root.after if root.after else 0.0
    out = []

    def draw(node: _Node, x: float, depth: int) -> None:
        width = node.after * scale
        if width < 0.5:
            return
        y = depth * ROW
        title = (
            f"{node.name}: {node.after:.3f} samples/txn in the changed release, "
            f"{node.before:.3f} before ({node.after - node.before:+.3f})"
        )
        label = html.escape(node.name if width > 40 else "")
        out.append(
            f'<g><title>{html.escape(title)}</title><rect class="frame" x="{x:.1f}" '
            f'y="{y}" width="{width:.1f}" height="{ROW - 1}" fill="{_colour(node)}"/>'
            f'<text x="{x + 3:.1f}" y="{y + ROW - 5}">{label[: int(width / 7)]}'
            "</text></g>"
        )
        child_x = x
        for child in sorted(node.children.values(), key=lambda c: c.name):
            draw(child, child_x, depth + 1)
            child_x += child.after * scale

    draw(root, 0.0, 0)
    return out


def page(before: Profile, after: Profile, functions: list[FunctionChange]) -> str:
    root = _tree(before, after)
    frames = _frames(root)
    depth = max((f.count(";") for f in after.stacks), default=0) + 2
    rows = "".join(
        f"<tr><td>{html.escape(f.function)}</td><td>{f.before:.4f}</td><td>{f.after:.4f}</td>"
        f"<td>{f.gained:+.4f}</td></tr>"
        for f in functions
    )
    heading = f"{html.escape(after.engine)} against {html.escape(before.engine)}"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>Differential flame graph: {heading}</title>
<style>
body {{ font-family: sans-serif; margin: 1em; }}
svg text {{ font-size: 11px; font-family: monospace; pointer-events: none; }}
table {{ border-collapse: collapse; }} td, th {{ border: 1px solid #ccc; padding: 2px 6px; }}
</style></head><body>
<h1>{heading}: on-CPU samples per transaction</h1>
<p>Each frame is as wide as its samples per transaction in {html.escape(after.engine)}
({after.samples} samples over {after.transactions} transactions; {html.escape(before.engine)}:
{before.samples} over {before.transactions}). Red: more per transaction than in
{html.escape(before.engine)}; blue: less. Hover a frame for its figures.</p>
<svg id="flamegraph" width="{WIDTH}" height="{depth * ROW}" xmlns="http://www.w3.org/2000/svg">
{"".join(frames)}
</svg>
<h2>Functions that gained the most samples per transaction of their own (not their callees')</h2>
<table id="functions"><thead><tr><th>function</th><th>{html.escape(before.engine)}</th>
<th>{html.escape(after.engine)}</th><th>gained</th></tr></thead><tbody>{rows}</tbody></table>
</body></html>
"""
