"""``axis view``: a local, read-only web app over many reports (list, history, compare,
side-by-side transcripts, search), served on 127.0.0.1 or exported as static pages.

The package root imports none of its modules up front (each of them runs this file first):
the names below load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from axis_eval._util.lazy import lazy_exports

if TYPE_CHECKING:
    from axis_eval.view.app import App as App, Response as Response
    from axis_eval.view.catalog import Catalog as Catalog
    from axis_eval.view.export import export_pages as export_pages
    from axis_eval.view.server import ViewServer as ViewServer

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "App": ".app",
        "Response": ".app",
        "Catalog": ".catalog",
        "export_pages": ".export",
        "ViewServer": ".server",
    },
)
