"""The web server of ``consolidate ui``: Starlette on Uvicorn (both installed with the MCP SDK),
bound to 127.0.0.1 unless told otherwise, every request refused (403) without the token.

The token (random, 32 URL-safe characters, new each start) comes in the URL printed at start
(``?token=...``, as Jupyter does); the first page sets it as a cookie (HttpOnly, SameSite=Strict)
so the links of the pages need not carry it, and every form posts it back as well (a page of
another site cannot post one). All store access runs on one thread that owns the Store
(:class:`StoreWorker`), so requests are served one at a time against it and never block the event
loop. Writes go through consolidate.ui.actions, under the store lock of the owners it calls.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import secrets
import socket
import sys
import threading
import time
import traceback
import webbrowser
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any
from urllib.parse import quote, urlencode

import anyio.to_thread
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from consolidate.core.errors import BadInput, ConsolidateError, StaleForm, StoreError
from consolidate.ui import actions, pages, reads
from consolidate.ui.html import page

#: The files /static/ serves, from the package (consolidate/ui/static/), with their media types.
STATIC = {"ui.css": "text/css; charset=utf-8", "ui.js": "text/javascript; charset=utf-8"}
#: Hosts that are this machine only.
LOOPBACK = ("127.0.0.1", "::1", "localhost")
REFUSED = "403: this page needs the token that `consolidate ui` printed with its URL\n"


class StoreWorker:
    """Runs functions of the store on one dedicated thread, which opens the Store (``open_store``)
    on first use and closes it at :meth:`stop`."""

    def __init__(self, open_store: Callable[[], Any]):
        self._open = open_store
        self._store: Any = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="consolidate-ui-store")

    def _call(self, fn: Callable[[Any], Any]) -> Any:
        if self._store is None:
            self._store = self._open()
        return fn(self._store)

    async def run(self, fn: Callable[[Any], Any]) -> Any:
        """``fn(store)`` on the store thread; what it returns or raises."""
        future = self._pool.submit(self._call, fn)
        return await anyio.to_thread.run_sync(future.result)

    def stop(self) -> None:
        """Close the Store (on its thread) and end the thread."""
        def close() -> None:
            if self._store is not None:
                self._store.close()
                self._store = None

        self._pool.submit(close).result()
        self._pool.shutdown(wait=True)


def status_of(refused: BaseException) -> int:
    """The HTTP status of a refused request: 409 a stale form, 404 an unknown memory or run, 400
    other bad input, 503 a store that cannot be read or written (read-only, locked, damaged), 500
    anything else. (Only classifies: the text a page shows is pages.error_line's.)"""
    if isinstance(refused, StaleForm):
        return 409
    if isinstance(refused, BadInput):
        return 404 if str(refused).startswith(("unknown memory", "unknown run")) else 400
    return 503 if isinstance(refused, StoreError) else 500


class App:
    """The routes over one store (``open_store``: a callable returning a Store) and one token;
    ``cookie``: the cookie's name (one per port: cookies do not tell ports apart)."""

    def __init__(self, open_store: Callable[[], Any], token: str, cookie: str = "consolidate-ui"):
        self.worker = StoreWorker(open_store)
        self.token = token
        self.cookie = cookie

    def authorized(self, request: Request) -> bool:
        """Whether ``request`` carries the token (query string or cookie)."""
        given = request.query_params.get("token") or request.cookies.get(self.cookie) or ""
        return hmac.compare_digest(given.encode("utf-8"), self.token.encode("utf-8"))

    async def render(self, request: Request, title: str, active: str, body: Callable[[Any, pages.View], str], *,
                     status: int = 200, error: BaseException | None = None) -> Response:
        """A whole page: ``body(store, view)`` in the layout; a ConsolidateError it raises becomes the
        page's error line (and status), any other error a one-line 500."""
        message = request.query_params.get("done") or ""

        def work(store) -> tuple[int, str]:
            view = pages.View(self.token, writable=not store.exists or store.writable)
            code, err = status, error
            try:
                text = body(store, view)
            except Exception as exc:  # noqa: BLE001 - a page answers with one line, never a traceback
                if not isinstance(exc, ConsolidateError):
                    traceback.print_exc(file=sys.stderr)
                code, err, text = status_of(exc), exc, pages.error_body()
            line = f"{store.path} (project {store.project})"
            return code, page(title, text, active=active, store_line=line, read_only=store.exists and not store.writable,
                              message="" if err else message, error=pages.error_line(err) if err else "")

        code, markup = await self.worker.run(work)
        return HTMLResponse(markup, status_code=code)

    async def memories(self, request: Request) -> Response:
        try:
            f = reads.Filters.parse(request.query_params)
        except BadInput as exc:
            return await self.render(request, "Memories", "/", lambda s, v: pages.error_body(), status=400, error=exc)
        return await self.render(request, "Memories", "/", lambda s, v: pages.memories_page(s, v, f))

    async def memory(self, request: Request, error: BaseException | None = None) -> Response:
        mid = request.path_params["memory_id"]
        return await self.render(request, f"Memory {mid}", "/", lambda s, v: pages.memory_page(s, v, mid),
                                 status=status_of(error) if error else 200, error=error)

    async def review(self, request: Request, error: BaseException | None = None) -> Response:
        return await self.render(request, "Review", "/review", pages.review_page,
                                 status=status_of(error) if error else 200, error=error)

    async def runs(self, request: Request, error: BaseException | None = None) -> Response:
        return await self.render(request, "Runs", "/runs", pages.runs_page,
                                 status=status_of(error) if error else 200, error=error)

    async def overview(self, request: Request) -> Response:
        return await self.render(request, "Overview", "/overview", pages.overview_page)

    async def _form(self, request: Request) -> dict[str, str] | None:
        """The posted form as text fields, or None when it lacks the token."""
        form = await request.form()
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        given = fields.get("token", "")
        return fields if hmac.compare_digest(given.encode("utf-8"), self.token.encode("utf-8")) else None

    async def post_memory(self, request: Request) -> Response:
        """approve / decline / edit (back to Review) or forget (back to the memory's page)."""
        fields = await self._form(request)
        if fields is None:
            return PlainTextResponse(REFUSED, status_code=403)
        mid, action = request.path_params["memory_id"], request.path_params["action"]
        try:
            done = await self.worker.run(lambda s: actions.memory_action(s, action, mid, fields))
        except ConsolidateError as exc:
            return await (self.memory(request, exc) if action == "forget" else self.review(request, exc))
        target = "/memory/" + quote(mid, safe="") if action == "forget" else "/review"
        return RedirectResponse(target + "?" + urlencode({"done": done}), status_code=303)

    async def post_undo(self, request: Request) -> Response:
        fields = await self._form(request)
        if fields is None:
            return PlainTextResponse(REFUSED, status_code=403)
        rid = request.path_params["run_id"]
        try:
            done = await self.worker.run(lambda s: actions.undo(s, rid, fields))
        except ConsolidateError as exc:
            return await self.runs(request, exc)
        return RedirectResponse("/runs?" + urlencode({"done": done}), status_code=303)

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return PlainTextResponse("404: no such file\n", status_code=404)
        body = (resources.files("consolidate.ui") / "static" / name).read_bytes()
        return Response(body, media_type=STATIC[name], headers={"Cache-Control": "no-cache"})

    def starlette(self) -> Starlette:
        """The ASGI app: the routes behind the token check."""
        routes = [Route("/", self.memories), Route("/memory/{memory_id}", self.memory),
                  Route("/memory/{memory_id}/{action}", self.post_memory, methods=["POST"]),
                  Route("/review", self.review), Route("/runs", self.runs), Route("/overview", self.overview),
                  Route("/runs/{run_id}/undo", self.post_undo, methods=["POST"]),
                  Route("/static/{name}", self.static),
                  Route("/favicon.ico", lambda request: Response(status_code=204))]

        @asynccontextmanager
        async def lifespan(_app):
            try:
                yield
            finally:
                await anyio.to_thread.run_sync(self.worker.stop)

        app = Starlette(routes=routes, lifespan=lifespan)
        guarded = self

        async def asgi(scope, receive, send):
            if scope["type"] == "http":
                request = Request(scope, receive)
                if not guarded.authorized(request):
                    await PlainTextResponse(REFUSED, status_code=403)(scope, receive, send)
                    return
                if request.query_params.get("token"):  # the printed URL: remember the token in a cookie
                    async def send_with_cookie(message):
                        if message["type"] == "http.response.start":
                            cookie = f"{guarded.cookie}={guarded.token}; Path=/; HttpOnly; SameSite=Strict"
                            message["headers"] = [*message.get("headers", []), (b"set-cookie", cookie.encode())]
                        await send(message)

                    await app(scope, receive, send_with_cookie)
                    return
            await app(scope, receive, send)

        return asgi  # type: ignore[return-value]


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (0: a free port). Raises OSError when it cannot."""
    try:
        family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:  # a name (localhost): resolved
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(64)
    sock.set_inheritable(True)
    return sock


def url_of(host: str, port: int, token: str, path: str = "/") -> str:
    """The URL to open: ``http://HOST:PORT/?token=TOKEN`` (an IPv6 host in brackets)."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{path}?token={token}"


def serve(open_store: Callable[[], Any], *, host: str = "127.0.0.1", port: int = 0, open_browser: bool = True,
          token: str | None = None, announce: Callable[[str], None] = print) -> None:
    """Serve the pages until interrupted (Ctrl-C). ``announce`` gets the line with the URL and its
    token once the socket listens. Raises OSError when the port cannot be bound."""
    token = token or secrets.token_urlsafe(24)
    sock = bind(host, port)
    port = sock.getsockname()[1]
    url = url_of(host, port, token)
    app = App(open_store, token, cookie=f"consolidate-ui-{port}")
    server = uvicorn.Server(uvicorn.Config(app.starlette(), log_level="warning", access_log=False, lifespan="on"))
    announce(f"consolidate ui: {url}")
    if open_browser:
        threading.Thread(target=_open_when_up, args=(server, url), daemon=True).start()
    server.run(sockets=[sock])


def has_desktop(platform: str = sys.platform, environ: Any = None) -> bool:
    """Whether a graphical browser can be opened: always on macOS and Windows, on Linux and the BSDs
    only with a display (``DISPLAY`` or ``WAYLAND_DISPLAY``). Without one, :mod:`webbrowser` would
    start a text browser (lynx, w3m) in the terminal the server prints to."""
    environ = os.environ if environ is None else environ
    if platform in ("darwin", "win32", "cygwin"):
        return True
    return bool(environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY"))


def _open_when_up(server: uvicorn.Server, url: str) -> None:
    """Open ``url`` in the user's browser once the server answers (where there is a desktop)."""
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.05)
    if not has_desktop():
        return
    try:
        webbrowser.open(url)
    except Exception:  # noqa: BLE001 - no browser: the printed URL is enough
        pass
