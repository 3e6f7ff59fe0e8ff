"""``axis view [FOLDER…] [--port N] [--open] [--export DIR]``: the reports in a browser
(docs/view.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from axis_eval.cli._common import axis_home, fail

if TYPE_CHECKING:
    from axis_eval.view import Catalog


@click.command("view")
@click.argument("folders", nargs=-1, metavar="[FOLDER…]")
@click.option("-c", "--config", "config_path", help="Config file or folder (locates .axis/).")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="Port on 127.0.0.1 (0: a free one, printed).",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the viewer in a browser.")
@click.option(
    "--export",
    "export_dir",
    metavar="DIR",
    help="Write the pages as static files into DIR (for a CI artifact or a static site), "
    "then exit.",
)
@click.option("--verbose", is_flag=True, help="Log every request on stderr.")
def view_command(
    folders: tuple[str, ...],
    config_path: str | None,
    port: int,
    open_browser: bool,
    export_dir: str | None,
    verbose: bool,
) -> None:
    """Browse reports: the list, history, comparisons, transcripts side by side, search.

    FOLDER is a report folder or a folder of report folders; without one, every report
    under the project's `.axis/reports`. The server binds 127.0.0.1 only and only reads.
    """
    from pathlib import Path

    from axis_eval import AxisError
    from axis_eval.errors import UsageError
    from axis_eval.runs.store import reports_root

    try:
        config_dir = Path(axis_home(config_path))
        given = [Path(f) for f in folders]
        for root in given:  # the project's own folder may not exist yet: an empty list then
            if not root.is_dir():
                raise UsageError(
                    f"axis view: {root}: not a folder",
                    hint="give report folders, or folders of report folders",
                )
        from axis_eval.view import Catalog

        roots = given or [reports_root(config_dir)]
        catalog = Catalog(roots, config_dir if not folders or config_path else None)
        if export_dir is not None:
            from axis_eval.view import export_pages

            written = export_pages(catalog, Path(export_dir))
            reports = len(catalog.headlines())  # the readable ones: those exported
            click.echo(f"view: {reports} report(s), {len(written)} page(s) → {export_dir}")
            return
        _serve(catalog, port, open_browser, verbose)
    except AxisError as error:
        fail(error)


def _serve(catalog: Catalog, port: int, open_browser: bool, verbose: bool) -> None:
    from axis_eval.errors import UsageError
    from axis_eval.view import App, ViewServer

    try:
        server = ViewServer(App(catalog), port, verbose=verbose)
    except OSError as error:
        raise UsageError(
            f"axis view: cannot listen on 127.0.0.1:{port}: {error.strerror or error}",
            hint="choose another --port, or 0 for a free one",
        ) from None
    reports = len(catalog.folders())
    click.echo(f"axis view: {reports} report(s) at {server.url} (Ctrl-C to stop)")
    if open_browser:
        import webbrowser

        webbrowser.open(server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
