"""A strict unified-diff applier (standard library only) for sandboxes without GNU ``patch``.

Runs INSIDE the sandbox as ``python3 -I -S -c <this source>`` in the repository root with the diff on stdin
(``arl/code.repo-v1`` uses GNU ``patch`` when the sandbox has it, this otherwise, e.g. in the minimal Docker
image). Semantics follow ``patch -p1`` (``a/``/``b/`` prefixes stripped; paths without them are taken as is)
with no fuzz: each hunk's context and removed lines must match exactly, at the stated line or at the nearest
offset. ``--- /dev/null`` creates a file, ``+++ /dev/null`` deletes one. All or nothing: if any hunk fails,
no file is changed. Exit status 0 on success, 1 on failure (with a message on stdout).
"""

import os
import re
import sys

HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class PatchError(Exception):
    pass


def _path(raw):
    p = raw.split("\t")[0].strip()
    if p == "/dev/null":
        return None
    if p.startswith(("a/", "b/")):
        p = p[2:]
    if not p or p.startswith("/") or ".." in p.split("/"):
        raise PatchError("refusing path %r (must be relative, inside the repository)" % raw.strip())
    return p


def parse(text):
    """[(old_path, new_path, [(old_start, old_lines, new_lines)])] from a unified diff."""
    lines = text.splitlines(keepends=True)
    files, i = [], 0
    while i < len(lines):
        if lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old, new = _path(lines[i][4:]), _path(lines[i + 1][4:])
            hunks, i = [], i + 2
            while i < len(lines) and lines[i].startswith("@@"):
                m = HUNK.match(lines[i])
                if not m:
                    raise PatchError("malformed hunk header: %r" % lines[i].strip())
                n_old = int(m.group(2)) if m.group(2) is not None else 1
                n_new = int(m.group(4)) if m.group(4) is not None else 1
                start = int(m.group(1))
                i += 1
                old_l, new_l = [], []
                while i < len(lines) and (len(old_l) < n_old or len(new_l) < n_new):
                    line = lines[i]
                    tag, body = line[:1], line[1:]
                    if line.startswith("\\"):  # "\ No newline at end of file"
                        i += 1
                        continue
                    if tag == " " or line in ("\n", "\r\n"):
                        body = body if tag == " " else "\n"
                        old_l.append(body)
                        new_l.append(body)
                    elif tag == "-":
                        old_l.append(body)
                    elif tag == "+":
                        new_l.append(body)
                    else:
                        raise PatchError("unexpected line in hunk: %r" % line.rstrip("\n"))
                    i += 1
                if len(old_l) != n_old or len(new_l) != n_new:
                    raise PatchError("hunk at line %d is truncated" % start)
                while i < len(lines) and lines[i].startswith("\\"):
                    if old_l and new_l and old_l[-1] == new_l[-1]:
                        old_l[-1] = new_l[-1] = old_l[-1].rstrip("\n")
                    elif new_l:
                        new_l[-1] = new_l[-1].rstrip("\n")
                    i += 1
                hunks.append((start, old_l, new_l))
            if not hunks:
                raise PatchError("no hunks for %s" % (new or old))
            files.append((old, new, hunks))
        else:
            i += 1
    if not files:
        raise PatchError("Only garbage was found in the patch input (no ---/+++ file headers).")
    return files


def apply_hunks(content, hunks, name):
    src = content.splitlines(keepends=True)
    out, pos = [], 0
    for k, (start, old_l, new_l) in enumerate(hunks, 1):
        want = max(start - 1, 0) if old_l else start
        found = None
        for delta in range(0, len(src) + 1):
            for cand in (want + delta, want - delta):
                if pos <= cand <= len(src) - len(old_l) and src[cand:cand + len(old_l)] == old_l:
                    found = cand
                    break
            if found is not None:
                break
        if found is None:
            raise PatchError("hunk #%d of %s does not apply (its context does not match the file)" % (k, name))
        out += src[pos:found] + new_l
        pos = found + len(old_l)
    return "".join(out + src[pos:])


def main():
    text = sys.stdin.read()
    try:
        plan = []
        for old, new, hunks in parse(text):
            target = new if new is not None else old
            if old is None:
                if os.path.exists(target):
                    raise PatchError("%s already exists" % target)
                plan.append((target, apply_hunks("", hunks, target)))
                continue
            if not os.path.isfile(old):
                raise PatchError("can't find file to patch: %s" % old)
            with open(old, encoding="utf-8") as fh:
                result = apply_hunks(fh.read(), hunks, old)
            plan.append((None, old) if new is None else (target, result))
    except (PatchError, UnicodeDecodeError) as exc:
        print("The patch does not apply; no file was changed.\n%s" % exc)
        sys.exit(1)
    for target, result in plan:
        if target is None:
            os.remove(result)
            print("deleting file %s" % result)
            continue
        parent = os.path.dirname(target)
        if parent:
            os.makedirs(parent, exist_ok=True)
        with open(target, "w", encoding="utf-8") as fh:
            fh.write(result)
        print("patching file %s" % target)


if __name__ == "__main__":
    main()
