"""``report.html``: one self-contained page per report, readable offline.

``render_html(folder)`` reads ``report.json``, each run's ``transcript.json`` (and
``baseline-comparison.json`` when the run was compared with a baseline) and returns the page;
``write_html`` writes it atomically (default: ``report.html`` in the report folder). The page
makes no network request: styles, script, charts and data are inside the file, and the heavy
parts (each pair's detail, the transcripts) are gzip+base64 payloads decoded in the browser
only when opened. See docs/reports.md, "HTML report".

The modules: ``_page`` (the two functions), ``_summary`` (the static part), ``_payload``
(the lazy parts, as data), ``_charts`` (SVG geometry) and ``_markup`` (templates whose every
slot escapes: the one way markup is made); the markup itself is in ``assets/``.
This package root imports none of them up front: importing any of its modules runs this file
first, so an eager import here would be an import cycle. The two names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from axis_eval._util.lazy import lazy_exports

if TYPE_CHECKING:
    from axis_eval.report.html._page import render_html as render_html, write_html as write_html

__getattr__, __dir__, __all__ = lazy_exports(
    __name__, {"render_html": "._page", "write_html": "._page"}
)
