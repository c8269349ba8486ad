"""The HTML report's pictures: inline SVG written here, no external asset and no JavaScript library.

Each chart is a ``<svg>`` with a ``viewBox`` and ``width="100%"``, so it scales to its panel and never
overflows the page; every bar has a ``<title>`` (the browser's tooltip) with the exact numbers, and the chart a
``role="img"`` and an ``aria-label``. Colours are CSS classes (``report_style.j2``), so they follow the page's
light and dark themes.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from markupsafe import Markup, escape

#: Geometry, in SVG user units (the chart scales as a whole).
WIDTH = 640
ROW = 22
BAR = 14
LABEL_W = 250
NUM_W = 56
MAX_LABEL = 38


def _cut(text: str, n: int = MAX_LABEL) -> str:
    text = str(text)
    return text if len(text) <= n else "…" + text[-(n - 1):]


def _e(text: object) -> str:
    return str(escape(str(text)))


def hbars(rows: Sequence[Tuple[str, Sequence[Tuple[int, str, str]]]], label: str, chart_id: str,
          total_note: Optional[str] = None) -> Markup:
    """A horizontal bar chart: one row per (name, [(value, css class, what), ...]); a row's parts are stacked.
    Bars are scaled to the largest row total; each part's tooltip says ``name: value what``."""
    rows = [(name, [p for p in parts if p[0] > 0]) for name, parts in rows]
    if not rows:
        return Markup("")
    top = max((sum(p[0] for p in parts) for _n, parts in rows), default=0) or 1
    room = WIDTH - LABEL_W - NUM_W
    height = ROW * len(rows) + (ROW if total_note else 0) + 4
    out: List[str] = [f'<svg class="chart" id="{_e(chart_id)}" role="img" aria-label="{_e(label)}" '
                      f'viewBox="0 0 {WIDTH} {height}" width="100%" preserveAspectRatio="xMinYMin meet"'
                      f'><title>{_e(label)}</title>']
    for i, (name, parts) in enumerate(rows):
        y = i * ROW + 2
        total = sum(p[0] for p in parts)
        out.append(f'<g class="bar-row" data-name="{_e(name)}" data-total="{total}">'
                   f'<text class="chart-label" x="{LABEL_W - 8}" y="{y + BAR - 2}" text-anchor="end">'
                   f'<title>{_e(name)}</title>{_e(_cut(name))}</text>')
        x = float(LABEL_W)
        for value, css, what in parts:
            w = max(1.5, room * value / top)
            out.append(f'<rect class="{_e(css)}" x="{x:.1f}" y="{y}" width="{w:.1f}" height="{BAR}" rx="2">'
                       f'<title>{_e(name)}: {value:,} {_e(what)}</title></rect>')
            x += w
        out.append(f'<text class="chart-num" x="{x + 6:.1f}" y="{y + BAR - 2}">{total:,}</text></g>')
    if total_note:
        out.append(f'<text class="chart-note" x="{LABEL_W}" y="{len(rows) * ROW + BAR}">{_e(total_note)}</text>')
    out.append("</svg>")
    return Markup("".join(out))


def share_bar(parts: Sequence[Tuple[int, str, str]], label: str, chart_id: str) -> Markup:
    """One stacked bar across the whole width (counted against off the path), with a legend under it."""
    parts = [p for p in parts if p[0] > 0]
    total = sum(p[0] for p in parts)
    if not total:
        return Markup("")
    height = 46
    out = [f'<svg class="chart share" id="{_e(chart_id)}" role="img" aria-label="{_e(label)}" '
           f'viewBox="0 0 {WIDTH} {height}" width="100%" preserveAspectRatio="xMinYMin meet"'
           f'><title>{_e(label)}</title>']
    x = 0.0
    legend_x = 0.0
    for value, css, what in parts:
        w = WIDTH * value / total
        pct = 100.0 * value / total
        out.append(f'<rect class="{_e(css)}" x="{x:.1f}" y="2" width="{w:.1f}" height="18" data-value="{value}">'
                   f'<title>{value:,} {_e(what)} ({pct:.0f}%)</title></rect>')
        x += w
        out.append(f'<rect class="{_e(css)}" x="{legend_x:.1f}" y="30" width="10" height="10"/>'
                   f'<text class="chart-label" x="{legend_x + 14:.1f}" y="39">{value:,} {_e(what)} ({pct:.0f}%)'
                   f'</text>')
        legend_x += 14 + 7.2 * len(f"{value:,} {what} ({pct:.0f}%)") + 18
    out.append("</svg>")
    return Markup("".join(out))
