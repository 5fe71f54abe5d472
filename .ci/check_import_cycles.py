#!/usr/bin/env python3
"""Fails on an import cycle between the modules of a crate (docs/architecture.md "Layers").

The rule, level by level: the child modules of one module (the files and directories beside its
`lib.rs`, `main.rs` or `mod.rs`) must form a DAG, where child A depends on child B when any
code inside A names a path into B (`use crate::b::..`, `super::b::X`, `crate::b::X(..)` inline,
or an item the parent re-exports from B with `pub use`). The parent file itself is the place
that assembles its children and is not a node. `#[cfg(test)]` modules are left out.

Usage: check_import_cycles.py (exit 1 and the modules of each cycle when there is one).
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def crates():
    for manifest in sorted(ROOT.glob("**/Cargo.toml")):
        if "target" in manifest.parts or "fuzz" in manifest.parts or manifest.parent == ROOT:
            continue
        src = manifest.parent / "src"
        for root_file in ("lib.rs", "main.rs"):
            if (src / root_file).exists():
                yield manifest.parent.name, src, root_file
                break


def module_files(src, root_file):
    """module path (tuple) -> file, for every file module of the crate."""
    out = {(): src / root_file}
    for f in src.rglob("*.rs"):
        rel = f.relative_to(src)
        if rel.parts[0] == "bin" or str(rel) in ("lib.rs", "main.rs"):
            continue
        parts = list(rel.with_suffix("").parts)
        if parts[-1] == "mod":
            parts = parts[:-1]
        out[tuple(parts)] = f
    return out


def strip(text):
    """Code without comments, string literals and #[cfg(test)] modules."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'r#*"(?:.|\n)*?"#*', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    text = re.sub(r"'(?:\\.|[^'\\])'", "' '", text)
    m = re.search(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*mod\s+\w+\s*\{", text)
    if m:
        text = text[: m.start()]
    return text


def expand(tree):
    """`a::{b::C, d}` -> [[a, b, C], [a, d]] (use trees)."""
    tree = re.sub(r"\s+", "", tree)
    depth, start, parts = 0, 0, []
    # split on top-level commas
    for i, c in enumerate(tree):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(tree[start:i])
            start = i + 1
    parts.append(tree[start:])
    out = []
    for p in parts:
        if not p:
            continue
        brace = p.find("{")
        if brace >= 0 and p.endswith("}"):
            prefix = [s for s in p[:brace].split("::") if s]
            for rest in expand(p[brace + 1 : -1]):
                out.append(prefix + rest)
        else:
            p = re.sub(r"\bas\b.*$", "", p)
            out.append([s for s in p.split("::") if s])
    return out


USE = re.compile(r"\buse\s+([^;]+);")
INLINE = re.compile(r"\b(crate|super|self)((?:::\w+)+)")


def absolute(path, here):
    """A path as written in module `here` -> absolute module path, or None (external)."""
    if not path:
        return None
    head, rest = path[0], path[1:]
    if head == "crate":
        return rest
    if head in ("super", "self"):
        base = list(here)
        while path and path[0] in ("super", "self"):
            if path[0] == "super":
                base = base[:-1]
            path = path[1:]
        return base + path
    return None


def references(text, here):
    out = []
    for m in USE.finditer(text):
        for p in expand(m.group(1)):
            a = absolute(p, here)
            if a is not None:
                out.append(a)
    code = USE.sub("", text)
    for m in INLINE.finditer(code):
        a = absolute([m.group(1)] + [s for s in m.group(2).split("::") if s], here)
        if a is not None:
            out.append(a)
    return out


def reexports(text, here):
    """Names a module file re-exports from its children: name -> child module name."""
    out = {}
    for m in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", text):
        for p in expand(m.group(1)):
            a = absolute(p, here) if p[0] in ("crate", "super", "self") else list(here) + p
            if a and len(a) > len(here) and list(a[: len(here)]) == list(here):
                name = p[-1] if p[-1] != "*" else None
                if name:
                    out[name] = a[len(here)]
    return out


def cycles_of(name, src, root_file):
    files = module_files(src, root_file)
    texts = {m: strip(f.read_text()) for m, f in files.items()}
    modules = set(files)
    exported = {m: reexports(t, m) for m, t in texts.items()}
    # edges[level] = {child: {child}}
    edges = {}
    for here, text in texts.items():
        for target in references(text, here):
            # the module part of the target: its longest prefix that is a module
            k = len(target)
            while k > 0 and tuple(target[:k]) not in modules:
                k -= 1
            tmod = tuple(target[:k])
            common = 0
            while common < min(len(here), len(tmod)) and here[common] == tmod[common]:
                common += 1
            if common == len(here):
                continue  # a path into itself or its own children
            level = here[:common]
            if common < len(tmod):
                dst = tmod[common]
            else:
                # an item of the level's own file: re-exported from a child?
                item = target[k] if k < len(target) else None
                dst = exported.get(level, {}).get(item)
                if dst is None:
                    continue
            src_child = here[common]
            if dst != src_child:
                edges.setdefault(level, {}).setdefault(src_child, set()).add(dst)
    found = []
    for level, graph in edges.items():
        for comp in scc(graph):
            if len(comp) > 1:
                prefix = "::".join(level)
                found.append(f"{name}: " + " <-> ".join((prefix + "::" if prefix else "") + c for c in sorted(comp)))
    return found


def scc(graph):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    nodes = set(graph) | {d for ds in graph.values() for d in ds}

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
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
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main():
    found = []
    for name, src, root_file in crates():
        found.extend(cycles_of(name, src, root_file))
    for c in found:
        print(f"import cycle: {c}")
    if found:
        return 1
    print("import cycles: none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
