"""``axis view --export DIR``: the viewer's pages as static files with relative links.

Written: ``index.html`` (every report, no filters), each report's pages (and a copy of its
own ``report.html``) and one page per pair
(what history points open), the history of every pair and agent, each report compared with
the one before it (in every sort order), those comparisons' side-by-side transcripts, and a
``search.html`` saying that search needs the server. Nothing is written into report folders.
"""

from __future__ import annotations

from pathlib import Path

from axis_eval.errors import UsageError
from axis_eval.files import atomic_write_text
from axis_eval.view.app import App, Response
from axis_eval.view.catalog import Catalog
from axis_eval.view.compare import SORTS
from axis_eval.view.layout import Links
from axis_eval.view.pages import PAGE_SIZE


def export_pages(catalog: Catalog, out: Path) -> list[Path]:
    """Write the static pages into ``out`` (created); returns the files written."""
    out = out.resolve()
    for folder in catalog.folders().values():
        if out == folder or folder in out.parents:
            raise UsageError(
                f"--export {out}: inside the report folder {folder}; the viewer never writes there"
            )
    out.mkdir(parents=True, exist_ok=True)
    links = Links(server=False)
    app = App(catalog, links)
    written: list[Path] = []

    def save(name: str, response: Response) -> None:
        path = out / name
        atomic_write_text(path, response.body)
        written.append(path)

    save("index.html", app.route([], {}))
    save("search.html", app.route(["search"], {}))
    heads = catalog.headlines()
    pairs: set[tuple[str, str]] = set()
    agents: set[str] = set()
    for i, head in enumerate(heads):
        rid = head.report_id
        manifest = catalog.manifest(rid)
        if manifest is None:
            continue
        own = app.report_html(rid)
        if own.status == 200:
            save(links.report_html(rid), own)
        pages = max(1, -(-len(manifest.results) // PAGE_SIZE))
        for n in range(1, pages + 1):
            save(links.report(rid, n), app.route(["report", rid], {"page": str(n)}))
        for p in manifest.results:
            pairs.add((p.scenario_key, p.agent_name))
            agents.add(p.agent_name)
            q = {"scenario": p.scenario_key, "agent": p.agent_name}
            save(
                links.report(rid, scenario=p.scenario_key, agent=p.agent_name),
                app.route(["report", rid], q),
            )
        for agent in sorted({p.agent_name for p in manifest.results}):
            save(links.report(rid, agent=agent), app.route(["report", rid], {"agent": agent}))
        if i + 1 < len(heads):
            before = heads[i + 1].report_id
            for sort in SORTS:
                save(
                    links.compare(before, rid, sort),
                    app.route(["compare", before, rid], {"sort": sort}),
                )
            other = catalog.manifest(before)
            common = {(p.scenario_key, p.agent_name) for p in manifest.results} & {
                (p.scenario_key, p.agent_name) for p in (other.results if other else [])
            }
            for scenario, agent in sorted(common):
                save(
                    links.compare_pair(before, rid, scenario, agent),
                    app.pair(before, rid, scenario, agent),
                )
    for scenario, agent in sorted(pairs):
        save(
            links.pair_history(scenario, agent),
            app.route(["history", "pair"], {"scenario": scenario, "agent": agent}),
        )
    for agent in sorted(agents):
        save(links.agent_history(agent), app.route(["history", "agent"], {"agent": agent}))
    return written
