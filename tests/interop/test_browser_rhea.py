"""A web browser speaks AMQP to ``amqp-sansio broker`` (issue 30): headless Chromium loads a
page that uses rhea's browser build (``node_modules/rhea/dist/rhea.js``, the browserified
library rhea's ``examples/websockets/client.html`` loads, pinned by
``tests/interop/peers/rhea/package.json``) over the browser's own ``WebSocket`` to
``amqp-sansio broker --ws-port 0`` (no other option), and sends a message; our command
``amqp-sansio receive ws://...`` then receives it, as a user runs it (docs/cli.rst).

The test serves the page and the bundle itself (a small HTTP server on 127.0.0.1, in a
thread), and the page reports what happens by fetching ``/report/<what>?detail=...`` from
it: each step, rhea's errors, the message's outcome. Every wait is bounded and says what it
waited for; Chromium runs in a session of its own and is killed with its children at the
end, however the test ends. Without Chromium (``.ci/run`` installs Debian's ``chromium``) or
without rhea's packages (``npm ci --prefix tests/interop/peers/rhea``) the test skips,
saying which. docs/websockets.rst ("Interoperability") says what this establishes.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from support import node_peers
from support.broker_process import BrokerProcess, amqp_sansio_command

#: Debian's package (``apt-get install chromium``); ``chromium`` on the PATH otherwise.
CHROMIUM = "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None
CHROMIUM = CHROMIUM or shutil.which("chromium")
#: rhea's browser build: the browserified library with a global ``require('rhea')``.
BUNDLE = node_peers.folder("rhea") / "node_modules" / "rhea" / "dist" / "rhea.js"
#: The flags that run Chromium here (as root, in a container, without a display).
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)
#: How long the page may take to load, connect and have its message accepted (Chromium's
#: start on a busy two-core machine is most of it).
PAGE_WAIT = 60.0
#: How long ``amqp-sansio receive`` may take, and its own ``--timeout``.
CLI_WAIT = 30.0
CLI_TIMEOUT = "10"


def skip_reason() -> str | None:
    if CHROMIUM is None:
        return "chromium is not installed (.ci/run installs Debian's chromium)"
    pinned = json.loads((node_peers.folder("rhea") / "package.json").read_text())
    version = node_peers.installed("rhea", "rhea")
    install = node_peers.install_command("rhea")
    if version is None or not BUNDLE.is_file():
        return f"rhea's browser build is not installed ({BUNDLE.name}): run `{install}`"
    if version != pinned["dependencies"]["rhea"]:
        return f"rhea {version} is installed, package.json pins another: run `{install}`"
    return None


SKIP = skip_reason()
pytestmark = pytest.mark.skipif(SKIP is not None, reason=str(SKIP))

#: The page: rhea as its browser example uses it (``require("rhea")``,
#: ``websocket_connect(WebSocket)``), offering the binding's subprotocol ``amqp``.
PAGE = """<!DOCTYPE html>
<html>
<head><meta charset="utf-8"><title>rhea in a browser</title>
<script>
var reported = false;
function report(what, detail) {
    // Each step goes back to the test server; the last one (ok or failed) only once.
    if (what === "ok" || what === "failed") {
        if (reported) return;
        reported = true;
    }
    fetch("/report/" + what + "?detail=" + encodeURIComponent(String(detail || "")));
}
window.onerror = function (message, source, line) {
    report("failed", "script error: " + message + " at " + source + ":" + line);
};
</script>
<script src="/rhea.js"></script>
</head>
<body>
<script>
var settings = JSON.parse(decodeURIComponent(location.hash.slice(1)));
report("loaded", navigator.userAgent);
var container = require("rhea");
container.on("connection_open", function () { report("opened", settings.url); });
container.on("sendable", function (context) {
    if (context.sender.sent) return;
    context.sender.sent = true;
    context.sender.send({message_id: settings.id, body: settings.body});
    report("sent", settings.id);
});
container.on("accepted", function (context) {
    report("ok", "accepted");
    context.connection.close();
});
["rejected", "released", "modified"].forEach(function (outcome) {
    container.on(outcome, function (context) {
        report("failed", "the message was " + outcome + ": " +
               JSON.stringify(context.delivery.remote_state || null));
    });
});
["connection_error", "sender_error", "session_error", "error"].forEach(function (name) {
    container.on(name, function (context) {
        var error = context.error || (context.connection && context.connection.error);
        report("failed", name + ": " + (error && (error.description || error.message || error)));
    });
});
container.on("disconnected", function (context) {
    var error = context.error;
    var why = error && error.type ? "the WebSocket's " + error.type + " event"
                                  : String(error || "");
    report("failed", "disconnected before the message was accepted: " + why);
});
var ws = container.websocket_connect(WebSocket);
var connection = container.connect(
    {connection_details: ws(settings.url, ["amqp"]), reconnect: false});
connection.open_sender(settings.address);
</script>
</body>
</html>
"""


class PageServer:
    """The page, rhea's bundle and the page's reports, over HTTP on 127.0.0.1."""

    def __init__(self) -> None:
        self.reports: queue.Queue[tuple[str, str]] = queue.Queue()
        self.served: list[str] = []
        bundle = BUNDLE.read_bytes()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # (http.server's name)
                url = urlsplit(self.path)
                server.served.append(url.path)
                if url.path == "/":
                    self.answer(200, "text/html; charset=utf-8", PAGE.encode())
                elif url.path == "/rhea.js":
                    self.answer(200, "text/javascript", bundle)
                elif url.path.startswith("/report/"):
                    detail = parse_qs(url.query).get("detail", [""])[0]
                    server.reports.put((url.path.removeprefix("/report/"), detail))
                    self.answer(204, "text/plain", b"")
                else:
                    self.answer(404, "text/plain", b"not here")

            def answer(self, status: int, kind: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass  # (the test says what was served when it fails)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/"
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


class Chromium:
    """Headless Chromium showing ``url``, in a session of its own (its pid is the group's),
    with a fresh profile; :meth:`kill` ends it and every process it started."""

    def __init__(self, url: str, profile: Path) -> None:
        assert CHROMIUM is not None
        self.log = profile.parent / "chromium.log"
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", url],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.strip().splitlines()[-lines:]) or "(an empty log)"

    def kill(self) -> None:
        """SIGTERM to the group of the session it leads, then SIGKILL to what is left of it
        (a renderer may outlive the browser process)."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess("--ws-port", "0") as started:
        yield started


@pytest.fixture
def page_server() -> Iterator[PageServer]:
    started = PageServer()
    yield started
    started.close()


def wait_for_the_page(server: PageServer, chromium: Chromium) -> list[tuple[str, str]]:
    """The page's reports up to its last (``ok`` or ``failed``); the test fails, saying what
    the page did, if Chromium exits or nothing final comes within :data:`PAGE_WAIT`."""
    reports: list[tuple[str, str]] = []
    deadline = time.monotonic() + PAGE_WAIT
    while time.monotonic() < deadline:
        try:
            reports.append(server.reports.get(timeout=0.5))
        except queue.Empty:
            status = chromium.proc.poll()
            if status is not None:
                pytest.fail(
                    f"chromium exited with status {status} before the page was done; it "
                    f"fetched {server.served}, reported {reports}; its log:\n"
                    f"{chromium.log_tail()}"
                )
            continue
        if reports[-1][0] in ("ok", "failed"):
            return reports
    pytest.fail(
        f"the page reported no outcome within {PAGE_WAIT:.0f} s: it fetched "
        f"{server.served or 'nothing'}, reported {reports or 'nothing'}; chromium's log:\n"
        f"{chromium.log_tail()}"
    )


def test_a_browser_sends_over_websocket_and_our_command_receives(
    broker: BrokerProcess, page_server: PageServer, tmp_path: Path
) -> None:
    """rhea in Chromium connects to the broker's WebSocket port (the upgrade made by the
    browser itself: its ``Origin``, its headers), opens a sender and sends one message,
    which the broker accepts; ``amqp-sansio receive ws://127.0.0.1:PORT/ --address A
    --json`` gets it with its id and body."""
    assert broker.ws_url is not None
    ws_url = broker.ws_url + "/"
    address = f"browser.{uuid.uuid4().hex[:8]}"
    message_id = f"browser-{uuid.uuid4().hex[:8]}"
    body = "hello from a browser"
    settings = {"url": ws_url, "address": address, "id": message_id, "body": body}
    page = page_server.url + "#" + json.dumps(settings)
    chromium = Chromium(page, tmp_path / "profile")
    try:
        reports = wait_for_the_page(page_server, chromium)
    finally:
        chromium.kill()
    assert reports[-1] == ("ok", "accepted"), reports
    assert [what for what, _ in reports] == ["loaded", "opened", "sent", "ok"], reports
    assert "HeadlessChrome/" in reports[0][1], reports[0]  # (the user agent)
    assert page_server.served[:2] == ["/", "/rhea.js"]

    received = subprocess.run(
        [
            *amqp_sansio_command(),
            "receive",
            ws_url,
            "--address",
            address,
            "--count",
            "1",
            "--json",
            "--timeout",
            CLI_TIMEOUT,
        ],
        capture_output=True,
        text=True,
        timeout=CLI_WAIT,
    )
    assert received.returncode == 0, received.stderr
    (line,) = received.stdout.splitlines()
    message = json.loads(line)
    assert message["properties"]["message-id"] == message_id, message
    assert (message["body-section"], message["body"]) == ("amqp-value", body), message
    assert "1 accepted" in received.stderr
