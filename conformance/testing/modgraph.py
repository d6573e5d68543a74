#!/usr/bin/env python3
"""Draws the file-level dependency picture of one crate's library and lists its circles.

Usage: modgraph.py SRC_DIR [--dot | --floors | --folders]

A file depends on another when it names an item of it by path (`use`, `crate::..`,
`super::..`, a child module, or a name a `use` brought in). Re-exports (`pub use`) are
followed to the file that defines the item, and a parent that only declares a child
(`mod x;`) does not depend on it. Circles are the strongly connected components of more
than one file; the exit status is 1 when there is any. `--floors` prints the files
floor by floor (a file sits one floor above the highest one it uses): the picture
docs/architecture.md summarises. `--folders` looks one level up: each top-level module (a
folder or a single file) is one room, rooms that use each other in a circle are listed,
and the rooms are printed floor by floor; the exit status is 1 when rooms form a circle.
"""

import os
import re
import sys
from collections import defaultdict

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip(text):
    """Removes comments, string and char literals (so paths inside them do not count)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not re.match(r"[A-Za-z0-9_]", text[i - 1])):
            m = re.match(r'r(#*)"', text[i:])
            close = '"' + m.group(1)
            j = text.find(close, i + len(m.group(0)))
            out.append('""')
            i = n if j < 0 else j + len(close)
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""')
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]) or re.match(r"'\\u\{[0-9a-fA-F]+\}'", text[i:i + 12]):
            j = text.find("'", i + 2 if text[i + 1] == "\\" else i + 1)
            out.append("' '")
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def modules(src):
    """Maps module path tuples to their files, from the file tree under `src`."""
    mods = {(): os.path.join(src, "lib.rs")}
    for root, _dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        base = () if rel == "." else tuple(rel.split(os.sep))
        if base and base[0] == "bin":
            continue
        for f in files:
            if not f.endswith(".rs") or (not base and f in ("lib.rs", "main.rs")):
                continue
            name = f[:-3]
            path = base if name == "mod" else base + (name,)
            mods[path] = os.path.join(root, f)
    return mods


def parse_use_tree(text):
    """Expands `a::{b, c::{d as e}, f::*}` into (segments, bound name) pairs."""
    text = re.sub(r"\s*::\s*", "::", re.sub(r"\s+", " ", text)).strip()

    def split_top(s):
        parts, depth, cur = [], 0, ""
        for ch in s:
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
                continue
            depth += ch == "{"
            depth -= ch == "}"
            cur += ch
        if cur.strip():
            parts.append(cur)
        return parts

    def walk(prefix, s):
        s = s.strip()
        if "{" in s:
            head, _, rest = s.partition("{")
            head = [p for p in head.split("::") if p]
            inner = rest[: rest.rfind("}")]
            for part in split_top(inner):
                yield from walk(prefix + head, part)
            return
        alias = None
        m = re.match(r"(.*) as (" + IDENT + ")$", s)
        if m:
            s, alias = m.group(1), m.group(2)
        segs = prefix + [p for p in s.split("::") if p]
        if segs and segs[-1] == "self":
            segs = segs[:-1]
        yield segs, alias or (segs[-1] if segs else None)

    yield from walk([], text)


def flatten_inline(code):
    """Reads an inline `mod x { .. }` as part of its file: its `super::` names the file."""
    out, i = [], 0
    for m in re.finditer(r"\bmod\s+" + IDENT + r"\s*\{", code):
        if m.start() < i:
            continue
        depth, j = 1, m.end()
        while j < len(code) and depth:
            depth += code[j] == "{"
            depth -= code[j] == "}"
            j += 1
        out.append(code[i:m.start()])
        out.append(re.sub(r"\bsuper\s*::", "self::", code[m.end():j - 1]))
        i = j
    out.append(code[i:])
    return "".join(out)


class Crate:
    def __init__(self, src):
        self.mods = modules(src)
        self.code = {m: flatten_inline(strip(open(f).read())) for m, f in self.mods.items()}
        self.reexports = {}
        self.aliases = {}
        for m, code in self.code.items():
            table, exported = {}, {}
            for vis, body in re.findall(r"(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", code):
                for segs, name in parse_use_tree(body):
                    absolute = self.absolute(m, segs)
                    if absolute is None or name is None:
                        continue
                    table[name] = absolute
                    if vis:
                        exported[name] = absolute
            for child in re.findall(r"\bmod\s+(" + IDENT + r")\s*;", code):
                table.setdefault(child, list(m) + [child])
            self.aliases[m] = table
            self.reexports[m] = exported

    def absolute(self, here, segs):
        if not segs:
            return None
        first = segs[0]
        if first == "crate":
            return segs[1:]
        if first == "super":
            base = list(here)
            while segs and segs[0] == "super":
                base = base[:-1]
                segs = segs[1:]
            return base + segs
        if first == "self":
            return list(here) + segs[1:]
        child = tuple(here) + (first,)
        if child in self.mods:
            return list(child) + segs[1:]
        return None  # an external crate or std

    def resolve(self, segs, seen=()):
        """The file (module path) an absolute path's item lives in."""
        mod = ()
        rest = list(segs)
        while rest and mod + (rest[0],) in self.mods:
            mod = mod + (rest[0],)
            rest = rest[1:]
        if rest and rest[0] in self.reexports.get(mod, {}) and (mod, rest[0]) not in seen:
            target = self.reexports[mod][rest[0]] + rest[1:]
            return self.resolve(target, seen + ((mod, rest[0]),))
        return mod

    def edges(self):
        out = defaultdict(set)
        path_re = re.compile(r"(?<![A-Za-z0-9_:])(" + IDENT + r"(?:\s*::\s*" + IDENT + r")*)")
        for m, code in self.code.items():
            # Drop the use statements themselves: their bound names are resolved below.
            for _vis, body in re.findall(r"(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", code):
                for segs, _name in parse_use_tree(body):
                    absolute = self.absolute(m, segs)
                    if absolute is not None:
                        out[m].add(self.resolve(absolute))
            body = re.sub(r"(pub(?:\([^)]*\))?\s+)?use\s+[^;]+;", " ", code)
            body = re.sub(r"\bmod\s+" + IDENT + r"\s*;", " ", body)
            for match in path_re.finditer(body):
                segs = [s.strip() for s in match.group(1).split("::")]
                if len(segs) == 1 and segs[0] in ("crate", "super", "self"):
                    continue  # `pub(crate)` and the like
                absolute = self.absolute(m, segs)
                if absolute is None and segs[0] in self.aliases[m]:
                    absolute = self.aliases[m][segs[0]] + segs[1:]
                if absolute is not None:
                    out[m].add(self.resolve(absolute))
            out[m].discard(tuple(m))
        return out


def circles(nodes, edges):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in nodes:
        if v not in index:
            visit(v)
    return found


def floors(nodes, edges):
    """Prints the files floor by floor: a file sits one floor above the highest it uses."""
    if circles(nodes, edges):
        print("no floors: there is a circle")
        return 1
    floor = {}

    def height(m):
        if m not in floor:
            floor[m] = 1 + max((height(t) for t in edges.get(m, ())), default=-1)
        return floor[m]

    for m in nodes:
        height(m)
    for level in range(max(floor.values()), -1, -1):
        row = sorted(name(m) for m in floor if floor[m] == level)
        print(f"floor {level}: " + ", ".join(row))
    return 0


def name(mod):
    return "::".join(mod) or "lib"


def rooms(crate, edges):
    """The top-level modules (rooms) and the arrows between different ones."""
    room_edges = defaultdict(set)
    for a, targets in edges.items():
        for b in targets:
            if a and b and a[0] != b[0]:
                room_edges[(a[0],)].add((b[0],))
    return sorted({(m[0],) for m in crate.mods if m}), room_edges


def main():
    src = sys.argv[1]
    crate = Crate(src)
    edges = crate.edges()
    if "--folders" in sys.argv:
        nodes, room_edges = rooms(crate, edges)
        found = circles(nodes, room_edges)
        for comp in found:
            print("rooms in a circle: " + ", ".join(name(c) for c in comp))
        if found:
            return 1
        return floors(nodes, room_edges)
    if "--dot" in sys.argv:
        print("digraph modules {")
        for a in sorted(edges):
            for b in sorted(edges[a]):
                print(f'  "{name(a)}" -> "{name(b)}";')
        print("}")
        return 0
    if "--floors" in sys.argv:
        return floors(sorted(crate.mods), edges)
    found = circles(sorted(crate.mods), edges)
    count = sum(len(e) for e in edges.values())
    print(f"{len(crate.mods)} files, {count} file-to-file arrows, {len(found)} circle(s)")
    for comp in found:
        print(f"circle of {len(comp)} files: " + ", ".join(name(c) for c in comp))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
