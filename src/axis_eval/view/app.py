"""The viewer's routes: a GET path and its query → a status and an HTML page.

Shared by the server (:mod:`axis_eval.view.server`) and the static export
(:mod:`axis_eval.view.export`). A report id is looked up in the catalog only (never joined
to a path), so anything outside the known report folders is a 404.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlsplit

from axis_eval.redact import Redactor
from axis_eval.report.html._markup import escape
from axis_eval.runs.store import HTML_FILE
from axis_eval.view.catalog import Catalog
from axis_eval.view.compare import compare_page
from axis_eval.view.history import agent_series, history_page, pair_series
from axis_eval.view.layout import Links, page, page_css
from axis_eval.view.pages import Previous, list_page, report_page
from axis_eval.view.search import search_page


@dataclass(frozen=True)
class Response:
    status: int
    body: str
    css: str
    own_policy: bool = False
    """The body is a report's own page, carrying its own Content-Security-Policy."""


class App:
    """Renders the pages of ``catalog`` with ``links`` (server routes or export files)."""

    def __init__(
        self, catalog: Catalog, links: Links | None = None, redactor: Redactor | None = None
    ) -> None:
        self.catalog = catalog
        self.links = links or Links()
        self.redactor = redactor or Redactor.from_env(os.environ, os.environ)
        # A page is redacted once escaped, where a secret holding & < > " ' is escaped too.
        self._page_redactor = self.redactor.html_escaped()

    def previous(self, rid: str) -> Previous:
        """The report started just before ``rid`` (its natural comparison) and its pairs."""
        ids = [h.report_id for h in self.catalog.headlines()]
        at = ids.index(rid) if rid in ids else -1
        before = ids[at + 1] if 0 <= at < len(ids) - 1 else None
        head = None if before is None else self.catalog.head(before)  # not its whole manifest
        if before is None or head is None:
            return None
        return before, {(p.scenario_key, p.agent_name) for p in head.results}

    def get(self, target: str) -> Response:
        parts = urlsplit(target)
        q = dict(parse_qsl(parts.query))
        path = [unquote(p) for p in parts.path.split("/") if p]
        return self.route(path, q)

    def _missing(self, what: str) -> Response:
        return Response(
            404,
            page("Not found", f"<h1>Not found</h1><p>{escape(what)}</p>", self.links),
            page_css(),
        )

    def _ok(self, body: str, css: str = "") -> Response:
        return Response(200, self._page_redactor.text(body), page_css(css))

    def route(self, path: list[str], q: dict[str, str]) -> Response:
        links, cat = self.links, self.catalog
        if not path:
            return self._ok(list_page(cat, q, links))
        head, rest = path[0], path[1:]
        if head == "report" and len(rest) == 2 and rest[1] == "page":
            return self.report_html(rest[0])
        if head == "report" and len(rest) == 1:
            manifest = cat.manifest(rest[0])
            if manifest is None:
                return self._missing(f"no report {rest[0]}")
            folder = cat.folder(rest[0])
            own = folder is not None and (folder / HTML_FILE).is_file()
            previous = self.previous(rest[0])
            return self._ok(report_page(rest[0], manifest, q, links, previous, own_page=own))
        if head == "history" and rest == ["pair"] and q.get("scenario") and q.get("agent"):
            return self._ok(history_page(pair_series(cat, q["scenario"], q["agent"], links), links))
        if head == "history" and rest == ["agent"] and q.get("agent"):
            return self._ok(history_page(agent_series(cat, q["agent"], links), links))
        if head == "search" and not rest:
            return self._ok(search_page(cat, q.get("q", ""), self.redactor, links))
        if head == "compare" and len(rest) in (2, 3):
            if len(rest) == 2:
                diff = cat.diff(rest[0], rest[1])
                if diff is None:
                    gone = rest[0] if cat.manifest(rest[0]) is None else rest[1]
                    return self._missing(f"no report {gone}")
                return self._ok(
                    compare_page(rest[0], rest[1], diff, q.get("sort", "verdict"), links)
                )
            if rest[2] == "pair" and q.get("scenario") and q.get("agent"):
                return self.pair(rest[0], rest[1], q["scenario"], q["agent"])
        return self._missing("no such page")

    def report_html(self, rid: str) -> Response:
        """The report's own self-contained page (``report.html``), as written by ``axis run``."""
        folder = self.catalog.folder(rid)
        path = None if folder is None else folder / HTML_FILE
        try:
            body = "" if path is None else path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            body = ""
        if not body:
            return self._missing(f"report {rid} has no page ({HTML_FILE})")
        return Response(200, body, "", own_policy=True)

    def pair(self, a_id: str, b_id: str, scenario: str, agent: str) -> Response:
        """The two transcripts of one pair side by side (``view.pair_page``)."""
        cat = self.catalog
        a, b = cat.manifest(a_id), cat.manifest(b_id)
        a_dir, b_dir = cat.folder(a_id), cat.folder(b_id)
        if a is None or b is None or a_dir is None or b_dir is None:
            return self._missing("no such report")
        wanted = (scenario, agent)
        if not any((p.scenario_key, p.agent_name) == wanted for p in a.results) or not any(
            (p.scenario_key, p.agent_name) == wanted for p in b.results
        ):
            return self._missing(f"no pair {scenario} · {agent} in both reports")
        pair_page = importlib.import_module("axis_eval.view.pair_page")  # another module's page
        fragment: str = pair_page.pair_compare_html(a_dir, a, b_dir, b, scenario, agent)
        css: str = pair_page.PAIR_COMPARE_CSS
        links = self.links
        body = (
            f'<p><a href="{links.compare(a_id, b_id)}">← compare {escape(a_id)} → '
            f"{escape(b_id)}</a> · "
            f'<a href="{links.pair_history(scenario, agent)}">history</a></p>{fragment}'
        )
        return self._ok(page(f"{scenario} · {agent}", body, links, extra_css=css), css)
