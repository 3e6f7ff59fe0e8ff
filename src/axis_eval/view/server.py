"""The viewer's HTTP server: stdlib, 127.0.0.1 only, GET only, a strict CSP on every page."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from axis_eval.view.app import App
from axis_eval.view.layout import csp

HOST = "127.0.0.1"


class _Handler(BaseHTTPRequestHandler):
    server: ViewServer
    server_version = "axis-view"
    sys_version = ""

    def do_GET(self) -> None:
        try:
            response = self.server.app.get(self.path)
        except Exception:  # a page that fails to render is a 500, the server keeps serving
            self._send(
                500, "<!doctype html><title>error</title><p>This page failed to render.</p>", ""
            )
            raise
        self._send(response.status, response.body, response.css, response.own_policy)

    def do_HEAD(self) -> None:
        self.send_error(405)

    def _send(self, status: int, body: str, css: str, own_policy: bool = False) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        if not own_policy:  # a report's page holds its own policy (its script's hash)
            self.send_header("Content-Security-Policy", csp(css, header=True))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    def _refuse(self) -> None:
        self.send_error(405, "axis view is read-only: GET only")

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse

    def log_message(self, format: str, *args: object) -> None:
        if self.server.verbose:
            super().log_message(format, *args)


class ViewServer(ThreadingHTTPServer):
    """Serves ``app`` on 127.0.0.1 (``port`` 0: a free one)."""

    daemon_threads = True

    def __init__(self, app: App, port: int = 0, *, verbose: bool = False) -> None:
        self.app = app
        self.verbose = verbose
        super().__init__((HOST, port), _Handler)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}/"
