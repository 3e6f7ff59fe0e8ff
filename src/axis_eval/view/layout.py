"""The viewer's page frame (inline CSS, light and dark, no script) and its links.

Every page is one HTML document with one inline stylesheet, allowed by its hash in the
Content-Security-Policy; nothing else loads (no script, no font, no image but inline SVG).
:class:`Links` builds the URLs: server routes with query strings, or, for ``--export``,
flat file names relative to the export folder.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from axis_eval.report.html._markup import escape

BASE_CSS = """
:root{color-scheme:light dark;--bg:#fff;--fg:#1b1f24;--muted:#59636e;--line:#d1d9e0;
--accent:#0969da;--bad:#cf222e;--good:#1a7f37;--band:rgba(9,105,218,.12)}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;
--line:#3d444d;--accent:#4493f8;--bad:#f85149;--good:#3fb950;--band:rgba(68,147,248,.18)}}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,sans-serif}
header{display:flex;gap:1.2em;align-items:center;padding:.6em 1.2em;
border-bottom:1px solid var(--line)}
header b{margin-right:1em}main{padding:1em 1.2em}a{color:var(--accent)}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid var(--line);
padding:.3em .5em;text-align:left;vertical-align:top}th{font-weight:600}
.num{text-align:right;font-variant-numeric:tabular-nums}.muted{color:var(--muted)}
.nw{white-space:nowrap}
.regressed,.bad{color:var(--bad)}.improved,.good{color:var(--good)}
.filters{display:flex;flex-wrap:wrap;gap:.4em 1em;margin:.5em 0 1em}
.filters a.on{font-weight:700}.chips a{margin-right:.5em}
svg.chart{max-width:100%;height:auto}svg.chart text{fill:var(--muted);font-size:11px}
svg.chart .grid{stroke:var(--line)}svg.chart .band{fill:var(--band)}
svg.chart .spread{stroke:var(--muted);stroke-width:2}
svg.chart polyline{fill:none;stroke-width:2}
.legend span{margin-right:1em}pre.hit{white-space:pre-wrap;margin:.2em 0}
mark{background:#fff8c5;color:#1b1f24}
"""

SERIES_COLORS = {
    "axisScore": "#8250df",
    "goalAchievement": "#1a7f37",
    "environment": "#bc4c00",
    "service": "#0969da",
    "agent": "#bf3989",
}
"""The composite and the four dimensions, one colour each (readable on light and dark)."""


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def csp(css: str, *, header: bool) -> str:
    """The page's policy: nothing but its one stylesheet (and forms back to the server)."""
    policy = f"default-src 'none'; style-src {_hash(css)}; img-src data:; base-uri 'none'"
    if header:  # frame-ancestors and form-action are ignored (with a warning) in a <meta>
        policy += "; form-action 'self'; frame-ancestors 'none'"
    return policy


def page(title: str, body: str, links: Links, *, extra_css: str = "") -> str:
    """A whole document around ``body`` (already escaped HTML)."""
    css = BASE_CSS + extra_css
    meta = (
        ""
        if links.server
        else '<meta http-equiv="Content-Security-Policy" '
        f'content="{escape(csp(css, header=False))}">'
    )
    nav = (
        f'<header><b>axis view</b><a href="{links.index()}">Reports</a>'
        f'<a href="{links.search()}">Search</a></header>'
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width,initial-scale=1">{meta}'
        f"<title>{escape(title)} · axis view</title><style>{css}</style></head>"
        f"<body>{nav}<main>{body}</main></body></html>"
    )


def page_css(extra_css: str = "") -> str:
    """The stylesheet of a page built with ``extra_css`` (its hash is in the header CSP)."""
    return BASE_CSS + extra_css


def key(*parts: str) -> str:
    """A short stable file-name key for names that may hold any character."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Links:
    """URLs of the viewer's pages: server routes (``server``) or export file names."""

    server: bool = True

    def _q(self, path: str, **params: object) -> str:
        kept = {k: v for k, v in params.items() if v not in (None, "", 1) or k == "x"}
        return escape(path + ("?" + urlencode(kept) if kept else ""))

    def index(self, **filters: str | None) -> str:
        return self._q("/", **filters) if self.server else "index.html"

    def report(
        self, rid: str, page: int = 1, scenario: str | None = None, agent: str | None = None
    ) -> str:
        if self.server:
            return self._q(f"/report/{quote(rid)}", page=page, scenario=scenario, agent=agent)
        if scenario is not None and agent is not None:
            return f"report-{escape(rid)}-{key(scenario, agent)}.html"
        if agent is not None:
            return f"report-{escape(rid)}-agent-{key(agent)}.html"
        return f"report-{escape(rid)}-{page}.html"

    def pair_history(self, scenario: str, agent: str) -> str:
        if self.server:
            return self._q("/history/pair", scenario=scenario, agent=agent)
        return f"history-pair-{key(scenario, agent)}.html"

    def agent_history(self, agent: str) -> str:
        if self.server:
            return self._q("/history/agent", agent=agent)
        return f"history-agent-{key(agent)}.html"

    def compare(self, a: str, b: str, sort: str = "verdict") -> str:
        if self.server:
            return self._q(
                f"/compare/{quote(a)}/{quote(b)}", sort=None if sort == "verdict" else sort
            )
        return f"compare-{escape(a)}-{escape(b)}-{escape(sort)}.html"

    def compare_pair(self, a: str, b: str, scenario: str, agent: str) -> str:
        if self.server:
            return self._q(f"/compare/{quote(a)}/{quote(b)}/pair", scenario=scenario, agent=agent)
        return f"pair-{escape(a)}-{escape(b)}-{key(scenario, agent)}.html"

    def report_html(self, rid: str, number: int | None = None) -> str:
        """The report's own page (``report.html``), at pair ``number`` (0-based) if given."""
        at = "" if number is None else f"#pair-{number}"
        return f"/report/{quote(rid)}/page{at}" if self.server else f"page-{escape(rid)}.html{at}"

    def search(self, q: str | None = None) -> str:
        return self._q("/search", q=q) if self.server else "search.html"
