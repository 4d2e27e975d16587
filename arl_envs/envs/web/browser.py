"""The browser backend: one headless Debian Chromium per worker process, driven by Playwright's ASYNC API.

Why the async API on a thread: Playwright's sync API refuses to run inside a running asyncio loop (a user's
``asyncio.run(main())`` calling ``env.step``) and is bound to the thread that started it. Here one daemon thread per
process runs an asyncio loop that owns Playwright and the browser; every env call submits a coroutine to that loop
(:meth:`LoopThread.call`) and blocks on its result, so ``reset``/``step``/``close`` work from any thread and from
inside any running loop, and several envs (threads) share one browser concurrently.

Chromium is found (:func:`find_chromium`) from ``ARL_ENVS_CHROMIUM`` or on ``PATH`` (``chromium``,
``chromium-browser``, ``google-chrome``); Debian's ``/usr/bin/chromium`` launcher script is replaced by the real
binary ``/usr/lib/chromium/chromium``. Playwright's own browser download is never used (``executable_path``).

Network: pages reach nothing but the env's own request router (``http://arl.test/...``, see
:class:`arl_envs.envs.web.env.WebEnv`): every other request is aborted by the router, host names do not resolve
(``--host-resolver-rules``), a dead proxy catches anything else, and Chromium's background services (updates,
sync, safe browsing, metrics, translation...) are switched off by :data:`CHROMIUM_ARGS`.

Lifecycle: the browser starts with the first env that needs it and closes when the last env of the process closes
(so ``env.close()`` leaves no Chromium behind); :func:`hold_browser` keeps it running across env lifetimes (tests,
benchmarks). A crashed or killed browser is detected (:meth:`BrowserHost.is_alive`) and relaunched by the next
:meth:`BrowserHost.acquire` (the next ``reset``).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import shutil
import threading
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

from arl_envs.core.errors import ArlError, DependencyNotInstalled

T = TypeVar("T")

#: Environment variable naming the Chromium executable.
CHROMIUM_ENV_VAR = "ARL_ENVS_CHROMIUM"
#: Executables looked up on PATH, in order.
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: Debian's launcher script -> the real binary (the script only adds flags and prints warnings).
_DEBIAN_LAUNCHERS = {"/usr/bin/chromium": "/usr/lib/chromium/chromium"}
#: Seconds allowed for launching Chromium.
LAUNCH_TIMEOUT_S = 60.0
#: Flags beyond Playwright's defaults: no background network traffic, no DNS, no GPU, quiet logging.
CHROMIUM_ARGS: tuple[str, ...] = (
    "--host-resolver-rules=MAP * ~NOTFOUND",  # no host name resolves: nothing reaches the network by name
    "--proxy-server=127.0.0.1:9",  # ... and anything that bypasses DNS goes to a dead local port
    "--proxy-bypass-list=<-loopback>",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-sync",
    "--disable-breakpad",
    "--disable-crash-reporter",
    "--no-pings",
    "--no-first-run",
    "--no-default-browser-check",
    "--metrics-recording-only",
    "--safebrowsing-disable-auto-update",
    # Chromium reads only the LAST --disable-features: this repeats Playwright's own list (1.5x) and adds ours.
    # ProactivelySwapBrowsingInstance/BackForwardCache/RenderDocument: a navigation reuses the renderer process
    # instead of starting a new one (3x faster page loads here); no back-forward cache (go_back reloads the page).
    "--disable-features=AvoidUnnecessaryBeforeUnloadCheckSync,DestroyProfileOnBrowserClose,HttpsUpgrades,"
    "HttpsFirstBalancedModeAutoEnable,LensOverlay,MediaRouter,PaintHolding,ThirdPartyStoragePartitioning,"
    "AvoidCorsURLLoaderRestartOnRedirect,OptimizationHints,NetworkTimeServiceQuerying,AimEnabled,PreconnectToSearch,"
    "Translate,InterestFeedContentSuggestions,CertificateTransparencyComponentUpdater,AutofillServerCommunication,"
    "PrivacySandboxSettings4,DialMediaRouteProvider,SafeBrowsing,ProactivelySwapBrowsingInstance,BackForwardCache,"
    "RenderDocument",
    "--process-per-site",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--mute-audio",
    "--hide-scrollbars",
    "--font-render-hinting=none",
    "--log-level=3",
)


class BrowserUnavailable(ArlError):
    """Chromium cannot be found or started; the message says how to install or point to it."""


class BrowserCrashed(ArlError):
    """The browser (or the page's renderer) died during a call; reported as ``info["env_error"]``."""


class BrowserCallTimeout(ArlError):
    """A whole browser call exceeded its watchdog deadline (the browser hangs); reported as ``env_error``."""


def find_chromium() -> str:
    """Path of the Chromium executable to launch.

    Order: ``$ARL_ENVS_CHROMIUM``; then ``chromium``, ``chromium-browser``, ``google-chrome`` on ``PATH``.
    Debian's launcher ``/usr/bin/chromium`` resolves to ``/usr/lib/chromium/chromium``.

    Raises:
        BrowserUnavailable: Nothing found, or ``$ARL_ENVS_CHROMIUM`` is not an executable file.
    """
    explicit = os.environ.get(CHROMIUM_ENV_VAR)
    if explicit:
        if os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return _DEBIAN_LAUNCHERS[os.path.realpath(explicit)] if _real_ok(explicit) else explicit
        raise BrowserUnavailable(f"${CHROMIUM_ENV_VAR}={explicit!r} is not an executable file")
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return _DEBIAN_LAUNCHERS[os.path.realpath(path)] if _real_ok(path) else path
    raise BrowserUnavailable(
        "no Chromium found: install Debian's package (`apt-get install chromium`) or set "
        f"${CHROMIUM_ENV_VAR} to a Chromium/Chrome executable (Playwright's browser download is not used)"
    )


def _real_ok(path: str) -> bool:
    real = _DEBIAN_LAUNCHERS.get(os.path.realpath(path))
    return real is not None and os.path.isfile(real) and os.access(real, os.X_OK)


class LoopThread:
    """A daemon thread running an asyncio event loop; :meth:`call` runs a coroutine there from any thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="arl-web-loop", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and not self.loop.is_closed()

    def call(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        """Run ``coro`` on the loop thread and return its result (its exception is re-raised here).

        Raises:
            BrowserCallTimeout: ``timeout_s`` elapsed (the coroutine is cancelled).
            ArlError: Called from the loop thread itself (it would deadlock).
        """
        if threading.current_thread() is self._thread:
            coro.close()
            raise ArlError("LoopThread.call from the loop thread would deadlock")
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return fut.result(timeout_s)
        except TimeoutError as exc:  # concurrent.futures.TimeoutError is TimeoutError on 3.11
            if fut.done() and fut.exception() is not None and not isinstance(fut.exception(), TimeoutError):
                raise fut.exception() from None  # type: ignore[misc]
            if not fut.done():
                fut.cancel()
                raise BrowserCallTimeout(f"browser call exceeded {timeout_s} s") from exc
            raise

    def stop(self) -> None:
        """Stop the loop and join the thread (pending work is abandoned)."""
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self.loop.close()


class BrowserHost:
    """The process's Playwright driver and Chromium browser, owned by one :class:`LoopThread`.

    Use :func:`get_host`; do not construct directly. ``acquire()``/``release()`` count the envs using the
    browser; the browser closes when the count returns to zero and no :func:`hold_browser` is active.

    Attributes:
        loop: The loop thread every browser call runs on.
        generation: Incremented at each (re)launch; sessions built on an older generation are stale.
    """

    def __init__(self) -> None:
        self.loop = LoopThread()
        self.pid = os.getpid()
        self._pw: Any = None
        self.browser: Any = None
        self.generation = 0
        self.executable: str | None = None
        self._users = 0
        self._holds = 0
        self._count_lock = threading.Lock()
        self._launch_lock: asyncio.Lock | None = None
        self._disconnected = True
        #: Clean browser contexts left by closed envs, reused by the next ones (owned by the env module).
        self.context_pool: list[Any] = []

    # ------------------------------------------------------------ sync entry points (any thread)
    def call(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        """Run a coroutine on the browser loop (see :meth:`LoopThread.call`)."""
        return self.loop.call(coro, timeout_s)

    def acquire(self) -> None:
        """Count one more user (an env); the browser itself starts lazily in :meth:`browser_async`."""
        with self._count_lock:
            self._users += 1

    def release(self) -> None:
        """Count one user less; close the browser when none is left and nothing holds it."""
        with self._count_lock:
            self._users = max(0, self._users - 1)
            idle = self._users == 0 and self._holds == 0
        if idle:
            self.shutdown_browser()

    def hold(self) -> None:
        with self._count_lock:
            self._holds += 1

    def unhold(self) -> None:
        with self._count_lock:
            self._holds = max(0, self._holds - 1)
            idle = self._users == 0 and self._holds == 0
        if idle:
            self.shutdown_browser()

    def shutdown_browser(self) -> None:
        """Close the browser and stop the Playwright driver (no-op if not running)."""
        if not self.loop.alive:
            return
        try:
            self.loop.call(self._shutdown_async(), timeout_s=30)
        except Exception:  # a dead browser may fail to close: nothing left to release then
            pass

    def is_alive(self) -> bool:
        """Whether the browser is running and connected."""
        return self.browser is not None and not self._disconnected and self.browser.is_connected()

    # ------------------------------------------------------------ async (loop thread only)
    async def browser_async(self) -> Any:
        """The running browser, launching (or relaunching after a crash) when needed.

        Raises:
            DependencyNotInstalled: ``playwright`` is not installed.
            BrowserUnavailable: Chromium is missing or does not start.
        """
        if self._launch_lock is None:
            self._launch_lock = asyncio.Lock()
        async with self._launch_lock:
            if self.is_alive():
                return self.browser
            await self._close_browser_quietly()
            try:
                from playwright.async_api import async_playwright
            except ImportError as exc:  # pragma: no cover - playwright is a declared extra
                raise DependencyNotInstalled("pip install 'arl-envs[web]'  (the playwright package)") from exc
            self.executable = find_chromium()
            if self._pw is None:
                self._pw = await async_playwright().start()
            try:
                browser = await self._pw.chromium.launch(
                    executable_path=self.executable,
                    headless=True,
                    args=list(CHROMIUM_ARGS),
                    timeout=LAUNCH_TIMEOUT_S * 1000,
                    handle_sigint=False,
                    handle_sigterm=False,
                    handle_sighup=False,
                )
            except Exception as exc:
                # the driver itself may be broken (killed): restart it once
                await self._stop_driver_quietly()
                self._pw = await async_playwright().start()
                try:
                    browser = await self._pw.chromium.launch(
                        executable_path=self.executable, headless=True, args=list(CHROMIUM_ARGS),
                        timeout=LAUNCH_TIMEOUT_S * 1000, handle_sigint=False, handle_sigterm=False,
                        handle_sighup=False,
                    )
                except Exception as exc2:
                    raise BrowserUnavailable(f"Chromium at {self.executable} did not start: {exc2}") from exc
            self._disconnected = False
            browser.on("disconnected", self._on_disconnected)
            self.browser = browser
            self.generation += 1
            return browser

    def _on_disconnected(self, *_: Any) -> None:
        self._disconnected = True

    async def _close_browser_quietly(self) -> None:
        self.context_pool = []
        b, self.browser = self.browser, None
        self._disconnected = True
        if b is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(b.close(), 10)

    async def _stop_driver_quietly(self) -> None:
        pw, self._pw = self._pw, None
        if pw is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(pw.stop(), 10)

    async def _shutdown_async(self) -> None:
        await self._close_browser_quietly()
        await self._stop_driver_quietly()


_HOST: BrowserHost | None = None
_HOST_LOCK = threading.Lock()
_atexit_registered = False


def get_host() -> BrowserHost:
    """The process's :class:`BrowserHost` (a new one after ``fork``: a child never shares its parent's)."""
    global _HOST, _atexit_registered
    with _HOST_LOCK:
        if _HOST is None or _HOST.pid != os.getpid() or not _HOST.loop.alive:
            _HOST = BrowserHost()
            if not _atexit_registered:  # on first use, not at import: importing the module changes nothing
                atexit.register(_shutdown_at_exit)
                _atexit_registered = True
        return _HOST


@contextlib.contextmanager
def hold_browser() -> Iterator[BrowserHost]:
    """Keep this process's browser running while the block runs, even between env lifetimes.

    Without it the browser closes when the last env closes, and the next env pays a new launch (about 0.3-1 s).
    Use it around loops that make many envs one after another (tests, benchmarks). On exit, the browser closes if
    no env is open.
    """
    host = get_host()
    host.hold()
    try:
        yield host
    finally:
        host.unhold()


def process_table() -> dict[int, tuple[int, str, float]]:
    """Every live process from ``/proc``: ``pid -> (parent pid, name, CPU seconds used (user + system))``.

    Zombies are left out. The name is ``/proc/<pid>/stat``'s ``comm`` (at most 15 characters).
    """
    tick = os.sysconf("SC_CLK_TCK")
    table: dict[int, tuple[int, str, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                data = fh.read().decode("utf-8", "replace")
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses; split at the last ')'
        lpar, rpar = data.find("("), data.rfind(")")
        fields = data[rpar + 2 :].split()
        if len(fields) < 13 or fields[0] == "Z":
            continue
        table[int(entry)] = (int(fields[1]), data[lpar + 1 : rpar], (int(fields[11]) + int(fields[12])) / tick)
    return table


def descends_from(pid: int, root: int, table: dict[int, tuple[int, str, float]]) -> bool:
    """Whether ``pid`` is ``root`` or one of its descendants in ``table`` (:func:`process_table`)."""
    p, hops = pid, 0
    while p and p != root and hops < 64:
        p, hops = table.get(p, (0, "", 0.0))[0], hops + 1
    return p == root


def chromium_pids(root_pid: int | None = None) -> list[int]:
    """Pids of the Chromium processes descending from ``root_pid`` (default: this process), via ``/proc``.

    Used by tests and leak checks. A process counts as Chromium when its executable name contains ``chrom``.
    """
    root = os.getpid() if root_pid is None else root_pid
    table = process_table()
    return sorted(pid for pid, (_, name, _) in table.items()
                  if "chrom" in name.lower() and pid != root and descends_from(pid, root, table))


def browser_main_pid() -> int | None:
    """Pid of this process's main Chromium process (the one without ``--type=``), or None."""
    for pid in chromium_pids():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                args = fh.read().split(b"\0")
        except OSError:
            continue
        if not any(a.startswith(b"--type=") for a in args):
            return pid
    return None


def _shutdown_at_exit() -> None:  # pragma: no cover - process exit
    host = _HOST
    if host is not None and host.pid == os.getpid() and host.loop.alive:
        host.shutdown_browser()
        host.loop.stop()
