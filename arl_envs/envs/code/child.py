"""The child side of the code test runner: imports the submission and answers call requests.

Runs INSIDE the sandbox as ``python3 -I -S -B -c <this source> <request fd> <response fd>``, started by the
runner parent (:mod:`arl_envs.envs.code.runner`). Everything here is untrusted once the submission is imported:
the parent believes nothing this process says except a value it can parse with its strict decoder.

It imports nothing but built-in modules at start (fast: ~15 ms), so it never parses JSON. Protocol:

* parent -> child, on the request fd: frames ``<4-byte big-endian length><marshal data>``; the first frame is
  the init dict (``mode``, ``source``, ``prelude``, ``entry_point``, ``repo_root``, ``modules``, ``memory_mb``,
  ``cpu_s``),
  then call dicts ``{"id", "fn", "args", "kwargs"}``. marshal is safe here: the parent is trusted.
* child -> parent, on the response fd: one JSON line per message: ``{"id":0,"ready":true}`` or
  ``{"id":0,"import_error":"<hex>"}``, then per call ``{"id":N,"ok":<value>}``, ``{"id":N,"exc":"<hex>"}`` or
  ``{"id":N,"bad_value":"<hex>"}``. Values use the runner's tagged form (``{"i":"12"}``...) with strings as
  ``{"s":"<utf-8 hex>"}``, so no escaping is needed here; text fields are hex too.
* ``mode="program"``: no calls; the submission runs as ``__main__`` with the real stdin/stdout.
* ``modules`` (reference runs of ``code.repo-v1``): ``{relative path: source}`` of a package served from memory by
  :class:`SourceImporter`, so the correct repository never exists in any file system the submission can read.
"""

import marshal
import os
import sys

MAX_DEPTH = 100
CHILD_MEMORY_FRACTION = 0.75
CHILD_INIT_FAILED = 96
MAX_TB_CHARS = 1500


class _Unsendable(Exception):
    pass


class SourceImporter:
    """A ``sys.meta_path`` finder and loader serving a package from memory (no file is ever written).

    Its name table is also used on the host by :class:`arl_envs.envs.code.isolated.IsolatedPackage`.

    Args:
        files: ``{"pkg/mod.py": source, "pkg/__init__.py": source, ...}``; entries not ending in ``.py`` are
            ignored.
        rename: Top-level package name to import the files under (default: the name in the paths).
    """

    def __init__(self, files, rename=None):
        self.sources = {}
        for rel, source in files.items():
            if not rel.endswith(".py"):
                continue
            parts = rel[:-3].split("/")
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            if rename:
                parts[0] = rename
            self.sources[".".join(parts)] = (source, is_package, rel)

    def find_spec(self, name, path=None, target=None):
        entry = self.sources.get(name)
        if entry is None:
            return None
        from importlib.machinery import ModuleSpec

        return ModuleSpec(name, self, origin="<memory>/" + entry[2], is_package=entry[1])

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        source, _, rel = self.sources[module.__spec__.name]
        exec(compile(source, rel, "exec"), module.__dict__)  # noqa: S102 - trusted: reference or generated code


def _hex(text):
    return str(text).encode("utf-8", "surrogatepass").hex()


def _enc(v, d=0):
    if d > MAX_DEPTH:
        raise _Unsendable("the return value is nested deeper than %d levels" % MAX_DEPTH)
    t = type(v)
    if v is None:
        return "null"
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return '{"i":"%s"}' % int.__repr__(v)
    if t is float:
        return '{"f":"%s"}' % float.__repr__(v)
    if t is str:
        return '{"s":"%s"}' % _hex(v)
    if t is list:
        return "[" + ",".join([_enc(x, d + 1) for x in v]) + "]"
    if t is tuple:
        return '{"t":[' + ",".join([_enc(x, d + 1) for x in v]) + "]}"
    if t is dict:
        return '{"d":[' + ",".join(["[" + _enc(k, d + 1) + "," + _enc(x, d + 1) + "]" for k, x in v.items()]) + "]}"
    if t is set:
        return '{"set":[' + ",".join([_enc(x, d + 1) for x in v]) + "]}"
    if t is frozenset:
        return '{"fs":[' + ",".join([_enc(x, d + 1) for x in v]) + "]}"
    if t is bytes:
        return '{"b":"%s"}' % v.hex()
    if t is complex:
        return '{"c":["%s","%s"]}' % (float.__repr__(v.real), float.__repr__(v.imag))
    raise _Unsendable(
        "a value of type %s.%s cannot be returned; return plain built-in values "
        "(int, float, str, bool, None, list, tuple, dict, set, bytes)" % (t.__module__, t.__qualname__)
    )


def _read_exact(fd, n):
    buf = b""
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def _recv(fd):
    head = _read_exact(fd, 4)
    if head is None:
        return None
    body = _read_exact(fd, int.from_bytes(head, "big"))
    return None if body is None else marshal.loads(body)


def _tb():
    import traceback

    lines = traceback.format_exc().rstrip().split("\n")
    out = []
    skip = False
    for line in lines:
        if line.startswith('  File "<string>"') or line.startswith('  File "<arl-child>"'):
            skip = True
            continue
        if skip and line.startswith("    "):
            continue
        skip = False
        out.append(line)
    text = "\n".join(out)
    return text if len(text) <= MAX_TB_CHARS else "[...]" + text[-(MAX_TB_CHARS - 5):]


def _limits(init):
    import resource

    def lower(which, value):
        # never above the limit inherited from the sandbox (an unprivileged process cannot raise a hard limit)
        hard = resource.getrlimit(which)[1]
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))

    lower(resource.RLIMIT_AS, int(init["memory_mb"] * CHILD_MEMORY_FRACTION) << 20)
    lower(resource.RLIMIT_CPU, max(1, int(-(-float(init["cpu_s"]) // 1))))
    try:
        with open("/proc/self/oom_score_adj", "w") as fh:
            fh.write("1000")
    except OSError:
        pass


def _resolve(name, ns):
    if ":" in name:
        import importlib

        mod_name, _, attr = name.partition(":")
        obj = importlib.import_module(mod_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj
    if name not in ns:
        raise NameError("name %r is not defined by your code" % name)
    return ns[name]


def main(req_fd, resp_fd):
    import _signal

    _signal.signal(_signal.SIGINT, _signal.default_int_handler)  # the runner ignores SIGINT; the submission does not
    init = _recv(req_fd)
    try:
        _limits(init)
    except Exception:
        os._exit(CHILD_INIT_FAILED)
    if init["mode"] == "program":
        os.close(req_fd)
        os.close(resp_fd)
        sys.argv = ["solution.py"]
        code = compile(init["source"], "solution.py", "exec")
        exec(code, {"__name__": "__main__", "__builtins__": __builtins__})
        return

    def send(text):
        for stream in (sys.stdout, sys.stderr):  # what the call printed arrives before its result
            try:
                stream.flush()
            except Exception:
                pass
        data = (text + "\n").encode()
        while data:
            data = data[os.write(resp_fd, data):]

    module = type(sys)("solution")
    sys.modules["solution"] = module
    ns = module.__dict__
    entry = init.get("entry_point") or ""
    try:
        if init.get("modules"):
            sys.meta_path.insert(0, SourceImporter(init["modules"]))
        if init.get("repo_root"):
            sys.path.insert(0, init["repo_root"])
        if init.get("prelude"):
            exec(compile(init["prelude"], "prompt.py", "exec"), ns)
        placeholder = ns.get(entry)
        if init.get("source"):
            exec(compile(init["source"], "solution.py", "exec"), ns)
        if entry and init["mode"] == "module" and (entry not in ns or ns.get(entry) is placeholder):
            send('{"id":0,"import_error":"%s"}' % _hex("your code does not define `%s`" % entry))
            return
    except BaseException:  # SystemExit at import time included
        send('{"id":0,"import_error":"%s"}' % _hex(_tb()))
        return
    send('{"id":0,"ready":true}')
    resolved = {}
    while True:
        msg = _recv(req_fd)
        if msg is None:
            return
        rid = int(msg["id"])
        try:
            fn = resolved.get(msg["fn"])
            if fn is None:
                fn = resolved[msg["fn"]] = _resolve(msg["fn"], ns)
            value = fn(*msg["args"], **msg["kwargs"])
        except BaseException:  # SystemExit / KeyboardInterrupt inside the function count as errors
            send('{"id":%d,"exc":"%s"}' % (rid, _hex(_tb())))
            continue
        try:
            text = _enc(value)
        except _Unsendable as exc:
            send('{"id":%d,"bad_value":"%s"}' % (rid, _hex(exc)))
            continue
        except (RecursionError, ValueError, MemoryError) as exc:  # deep values, int digit limit
            send('{"id":%d,"bad_value":"%s"}' % (rid, _hex("cannot send the return value: %s" % exc)))
            continue
        send('{"id":%d,"ok":%s}' % (rid, text))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
