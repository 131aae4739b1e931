"""One headless Chromium for the site's browser checks (``tests/docs/test_docs_site.py``), driven over the
DevTools protocol on a pipe (``--remote-debugging-pipe``: JSON messages ended by a NUL byte, read by the
browser on its fd 3, written on its fd 4), so that the pages are opened in one browser instead of one
Chromium process started per page (about a second of CPU and two of wall time each).

:meth:`Browser.open` loads a page in a new tab of 1280 x 1600 pixels with the browser's cache off (every
resource the page needs is requested, as by a browser of its own), waits for its load event, for MathJax to
have typeset it and for its fonts, and returns its screenshot, its DOM and what the browser reported while
loading it. Every wait is bounded (:data:`TIMEOUT`): a browser that stops answering fails the test."""
from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import signal
import subprocess

#: Seconds the browser may take to answer one message before the check fails.
TIMEOUT = 60
#: The flags of the browser (no network of its own, no first-run work, no sandbox: tests run as root).
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--hide-scrollbars", "--remote-debugging-pipe")
#: Run in the page after its load event: MathJax has typeset it (where it has MathJax), its fonts are loaded,
#: and the loads those started have ended.
_SETTLED = ("(async () => { if (window.MathJax && MathJax.startup) await MathJax.startup.promise;"
            " await document.fonts.ready; await new Promise(r => setTimeout(r, 200)); })()")


class Browser:
    """A headless Chromium started with the user data directory ``profile``; :meth:`close` ends it."""

    def __init__(self, executable: str, profile):
        to_browser, from_browser = os.pipe(), os.pipe()     # four new descriptors: 3 and 4 are open now

        def on_fds_3_and_4():           # in the child: the protocol's descriptors (moved out of the way first,
            reads = fcntl.fcntl(to_browser[0], fcntl.F_DUPFD, 10)        # either may be 3 or 4 itself)
            writes = fcntl.fcntl(from_browser[1], fcntl.F_DUPFD, 10)
            os.dup2(reads, 3)
            os.dup2(writes, 4)
        self.proc = subprocess.Popen([executable, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                                     preexec_fn=on_fds_3_and_4, pass_fds=(3, 4), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        os.close(to_browser[0])
        os.close(from_browser[1])
        self._out, self._in = to_browser[1], from_browser[0]
        self._buffer, self._id, self._events = b"", 0, []

    def _read(self) -> dict:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._in], [], [], TIMEOUT)
            if not ready:
                raise TimeoutError(f"headless Chromium did not answer within {TIMEOUT} s")
            chunk = os.read(self._in, 1 << 16)
            if not chunk:
                raise EOFError(f"headless Chromium ended (exit status {self.proc.poll()})")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        """The result of the protocol command ``method``; the events that come before it are kept."""
        self._id += 1
        message = {"id": self._id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._read()
            if answer.get("id") == self._id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer["result"]
            self._events.append(answer)

    def _wait_for(self, method: str, session: str) -> None:
        while not any(e.get("method") == method and e.get("sessionId") == session for e in self._events):
            self._events.append(self._read())

    def open(self, url: str) -> tuple[bytes, str, list]:
        """``(screenshot PNG, DOM, events)`` of the page ``url`` once loaded and typeset; the events are
        the protocol's log entries, requests and failed loads (``Log.entryAdded``,
        ``Network.requestWillBeSent``, ``Network.loadingFailed``)."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        try:
            self.send("Emulation.setDeviceMetricsOverride",
                      {"width": 1280, "height": 1600, "deviceScaleFactor": 1, "mobile": False}, session)
            self.send("Emulation.setScrollbarsHidden", {"hidden": True}, session)
            for domain in ("Page", "Log", "Network", "Runtime"):
                self.send(f"{domain}.enable", {}, session)
            self.send("Network.setCacheDisabled", {"cacheDisabled": True}, session)   # each page loads all it needs
            self.send("Page.navigate", {"url": url}, session)
            self._wait_for("Page.loadEventFired", session)
            self.send("Runtime.evaluate", {"expression": _SETTLED, "awaitPromise": True}, session)
            shot = self.send("Page.captureScreenshot", {"format": "png"}, session)["data"]
            dom = self.send("Runtime.evaluate", {"expression": "document.documentElement.outerHTML",
                                                 "returnByValue": True}, session)["result"]["value"]
        finally:
            events = [e for e in self._events if e.get("sessionId") == session]
            self._events = [e for e in self._events if e.get("sessionId") != session]
            self.send("Target.closeTarget", {"targetId": target})
        return base64.b64decode(shot), dom, [e for e in events if e.get("method") in (
            "Log.entryAdded", "Network.loadingFailed", "Network.requestWillBeSent")]

    def close(self) -> None:
        """End the browser and every process it started."""
        try:
            self.send("Browser.close")
            self.proc.wait(timeout=30)
        except (OSError, EOFError, TimeoutError, RuntimeError, subprocess.TimeoutExpired):
            pass
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            os.close(self._out)
            os.close(self._in)


def failed_loads(events: list) -> list[str]:
    """The failed loads among a page's ``events`` (:meth:`Browser.open`): a log entry "Failed to load
    resource" or a load ended by a ``net::ERR_`` error, each with its URL; the tab's own request for
    ``/favicon.ico`` (which the page does not ask for) left out."""
    urls = {e["params"]["requestId"]: e["params"]["request"]["url"] for e in events
            if e["method"] == "Network.requestWillBeSent"}
    problems = []
    for event in events:
        params = event["params"]
        if event["method"] == "Log.entryAdded":
            entry = params["entry"]
            text, url = entry.get("text", ""), entry.get("url", "")
        elif event["method"] == "Network.loadingFailed":
            text, url = params.get("errorText", ""), urls.get(params.get("requestId"), "")
        else:
            continue
        if ("Failed to load resource" in text or "net::ERR_" in text) and not url.endswith("/favicon.ico"):
            problems.append(f"{text} {url}".strip())
    return problems
