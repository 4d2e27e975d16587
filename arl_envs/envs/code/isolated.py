"""Running OUR OWN reference code on the host without touching interpreter-wide state.

The code envs compute expected outputs by running generated reference programs and packages (never model code:
that runs in a sandbox). Swapping ``sys.stdin``/``sys.stdout`` or registering modules in ``sys.modules`` /
``sys.meta_path`` for that would leak into every other thread of the process (a trainer stepping envs from
threads, its logging), so each run here gets private builtins instead:

* :func:`run_program` gives a program its own ``input``, ``print`` and ``sys`` (a proxy whose ``stdin``,
  ``stdout`` and ``stderr`` are in-memory files; every other attribute is the real ``sys``);
* :class:`IsolatedPackage` loads an in-memory package into a private module table, resolving imports of the
  package itself (absolute or relative) through a per-package ``__import__``; other imports go to the real one.

Both are safe to call from several threads at once.
"""

from __future__ import annotations

import builtins
import io
import sys
import types
from typing import Any

from arl_envs.envs.code.child import SourceImporter


class _SysProxy(types.ModuleType):
    """``sys`` for one run: private standard streams, the real module for every other attribute."""

    def __init__(self, stdin: io.StringIO, stdout: io.StringIO) -> None:
        super().__init__("sys")
        self.stdin, self.stdout, self.stderr = stdin, stdout, io.StringIO()

    def __getattr__(self, name: str) -> Any:
        return getattr(sys, name)


def run_program(source: str, stdin: str, filename: str = "<reference>") -> str:
    """Run ``source`` as ``__main__`` with ``stdin`` as its standard input; returns what it printed.

    The program sees private ``input``, ``print`` and ``import sys`` (see the module docstring); nothing
    process-wide is changed.
    """
    fin, fout = io.StringIO(stdin), io.StringIO()
    fake_sys = _SysProxy(fin, fout)

    def _print(*args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("file", fake_sys.stdout)
        builtins.print(*args, **kwargs)

    def _input(prompt: object = "") -> str:
        fake_sys.stdout.write(str(prompt))
        line = fake_sys.stdin.readline()
        if not line:
            raise EOFError("EOF when reading a line")
        return line[:-1] if line.endswith("\n") else line

    def _import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:  # noqa: A002
        if name == "sys" and level == 0:
            return fake_sys
        return builtins.__import__(name, globals, locals, fromlist, level)

    own = dict(builtins.__dict__, print=_print, input=_input, __import__=_import)
    exec(compile(source, filename, "exec"), {"__name__": "__main__", "__builtins__": own})  # noqa: S102 - our reference
    return fout.getvalue()


class IsolatedPackage:
    """An in-memory package (our generated code only) loaded without ``sys.modules`` or ``sys.meta_path``.

    Args:
        package: The top-level package name, e.g. ``"schedule"``.
        files: ``{"schedule/__init__.py": source, "schedule/timeutil.py": source, ...}``; entries outside
            ``package`` or not ending in ``.py`` are ignored.
    """

    def __init__(self, package: str, files: dict[str, str]) -> None:
        self.package = package
        # dotted name -> (source, is_package, path): the same table the sandboxed child's importer serves
        own = {rel: src for rel, src in files.items() if rel.startswith(package + "/")}
        self.sources: dict[str, tuple[str, bool, str]] = SourceImporter(own).sources
        self.modules: dict[str, types.ModuleType] = {}
        self._builtins = dict(builtins.__dict__, __import__=self._import)

    def function(self, module: str, name: str) -> Any:
        """Attribute ``name`` of ``<package>.<module>`` (loading the modules it imports)."""
        return getattr(self.load(f"{self.package}.{module}"), name)

    def load(self, name: str) -> types.ModuleType:
        """The module ``name`` (dotted, inside the package), executed once on first use.

        Raises:
            ModuleNotFoundError: ``name`` is not a module of the package.
        """
        mod = self.modules.get(name)
        if mod is not None:
            return mod
        if name not in self.sources:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        source, is_package, rel = self.sources[name]
        parent_name, _, leaf = name.rpartition(".")
        parent = self.load(parent_name) if parent_name else None
        if name in self.modules:  # the parent's __init__ imported it
            return self.modules[name]
        mod = types.ModuleType(name)
        mod.__file__ = "<memory>/" + rel
        mod.__package__ = name if is_package else parent_name
        if is_package:
            mod.__path__ = []
        mod.__builtins__ = self._builtins  # type: ignore[attr-defined]
        self.modules[name] = mod
        try:
            exec(compile(source, rel, "exec"), mod.__dict__)  # noqa: S102 - trusted: reference or generated code
        except BaseException:
            del self.modules[name]
            raise
        if parent is not None:
            setattr(parent, leaf, mod)
        return mod

    def _import(self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:  # noqa: A002
        if level > 0:
            base = (globals or {}).get("__package__") or ""
            for _ in range(level - 1):
                base = base.rpartition(".")[0]
            full = f"{base}.{name}" if name else base
        elif name == self.package or name.startswith(self.package + "."):
            full = name
        else:
            return builtins.__import__(name, globals, locals, fromlist, level)
        mod = self.load(full)
        if fromlist:
            for item in fromlist:
                if not hasattr(mod, item) and f"{full}.{item}" in self.sources:
                    self.load(f"{full}.{item}")
            return mod
        return self.load(full.split(".")[0]) if level == 0 else mod
