#!/usr/bin/env python3
"""Checks the documentation: README.md and the mdBook book under docs/ (docs/book.toml).

- Every Markdown link (inline `[text](target)`, images, reference definitions `[id]: target`)
  in README.md and docs/*.md, outside fenced code blocks and inline code: a relative target must
  be a file or directory of this repository (relative to the linking file, `#anchor` stripped);
  an anchor (`file.md#anchor`, or `#anchor` in the same file) must be the id of a heading of
  that Markdown file, by GitHub's and mdBook's rule (lowercase; whitespace → `-`; characters
  other than letters, digits, `-` and `_` dropped; repeated headings get `-1`, `-2`...).
  External links (http, https, mailto) are not fetched.
- Every docs/*.md but SUMMARY.md is a chapter listed in docs/SUMMARY.md.
- README.md is shorter than 200 lines.

Prints each problem as `file:line: message` and exits 1; otherwise prints one OK line.
Python 3 standard library only: `python3 .ci/check_docs.py` from anywhere.
"""

from __future__ import annotations

import re
import sys
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README_MAX_LINES = 200
EXTERNAL = re.compile(r"^(https?|mailto|ftp):", re.IGNORECASE)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
# Link text: anything without brackets, or one level of nested brackets.
LINK_OPEN = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(")
REF_DEF = re.compile(r"(?m)^ {0,3}\[([^\]]+)\]:[ \t]*(<[^>]*>|\S+)")
HTML_ID = re.compile(r"""<[^>]*\b(?:id|name)\s*=\s*["']([^"']+)["']""", re.IGNORECASE)

problems: list[str] = []


def problem(path: Path, line: int, message: str) -> None:
    problems.append(f"{rel(path)}:{line}: {message}")


def rel(path: Path) -> str:
    try:
        return path.relative_to(ROOT).as_posix()
    except ValueError:
        return path.as_posix()


def fenced(text: str):
    """(line, inside) for each line: inside is true for fence lines and the lines between them."""
    fence = None
    for line in text.split("\n"):
        m = FENCE.match(line)
        if m and fence is None:
            fence = m.group(1)
            yield line, True
        elif m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):].strip():
            fence = None
            yield line, True
        else:
            yield line, fence is not None


def prose(text: str) -> str:
    """The text with fenced code blocks emptied and, paragraph by paragraph, backslash escapes and
    inline code spans (which may run over several lines) replaced by `x`s: same lines, same
    columns."""
    lines = [("" if inside else line) for line, inside in fenced(text)]
    out, block = [], []
    for line in lines + [""]:
        if line.strip():
            block.append(line)
            continue
        if block:
            out.append(blank_code("\n".join(block)))
            block = []
        out.append(line)
    return "\n".join(out[:-1])


def blank_code(text: str) -> str:
    text = re.sub(r"\\[^\n]", "xx", text)
    out, i = [], 0
    while i < len(text):
        if text[i] == "`":
            run = len(text[i:]) - len(text[i:].lstrip("`"))
            close = text.find("`" * run, i + run)
            # The closing run must be exactly as long as the opening one.
            while close != -1 and close + run < len(text) and text[close + run] == "`":
                close = text.find("`" * run, close + run + 1)
            if close == -1:
                out.append(text[i : i + run])
                i += run
                continue
            out.append(re.sub(r"[^\n]", "x", text[i : close + run]))
            i = close + run
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def heading_text(raw: str) -> str:
    """The text a heading renders to: links and images as their text, no markup characters."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", raw)
    text = re.sub(r"<[^>]+>", "", text)
    return text.replace("`", "").replace("*", "")


def slug(text: str) -> str:
    out = []
    for ch in heading_text(text).strip().lower():
        if ch.isalnum() or ch in "-_":
            out.append(ch)
        elif ch.isspace():
            out.append("-")
    return "".join(out)


_anchor_cache: dict[Path, set[str]] = {}


def anchors(path: Path) -> set[str]:
    """The ids of the headings of a Markdown file (and explicit HTML ids)."""
    if path in _anchor_cache:
        return _anchor_cache[path]
    ids: set[str] = set()
    previous = ""
    for line, inside in fenced(path.read_text(encoding="utf-8")):
        if inside:
            previous = ""
            continue
        ids.update(HTML_ID.findall(line))
        title = None
        m = ATX.match(line)
        if m:
            title = m.group(2) or ""
        elif SETEXT.match(line) and previous.strip() and not re.match(r"^\s*([|>#*+-]|\d+[.)])", previous):
            title = previous
        if title is not None:
            # As mdBook's unique_id (and GitHub): the first free of id, id-1, id-2...
            base = candidate = slug(title)
            n = 0
            while candidate in ids:
                n += 1
                candidate = f"{base}-{n}"
            ids.add(candidate)
            previous = ""
        else:
            previous = line
    _anchor_cache[path] = ids
    return ids


def links(text: str):
    """(line number, destination) of every link and reference definition outside code."""
    text = prose(text)
    for m in LINK_OPEN.finditer(text):
        number = text.count("\n", 0, m.end()) + 1
        yield number, link_target(text, m.end())
    for m in REF_DEF.finditer(text):
        yield text.count("\n", 0, m.start()) + 1, m.group(2).strip("<>")


def link_target(text: str, start: int) -> str | None:
    """The destination of the inline link whose `(` ends at `start`, without its title."""
    if text.startswith("<", start):
        end = text.find(">", start)
        return None if end == -1 or "\n" in text[start:end] else text[start + 1 : end]
    depth, i = 0, start
    while i < len(text):
        ch = text[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            if depth == 0:
                return text[start:i]
            depth -= 1
        elif ch.isspace():
            # A title may follow the destination: `[text](dest "title")`.
            return text[start:i] if depth == 0 else None
        i += 1
    return None


def check_target(path: Path, number: int, target: str) -> int:
    """Checks one link; answers 1 if it is internal (checked), 0 if external or empty."""
    target = target.strip()
    if not target or EXTERNAL.match(target):
        return 0
    if SCHEME.match(target):
        problem(path, number, f"link to an unsupported scheme: {target}")
        return 1
    file_part, _, anchor = target.partition("#")
    file_part = urllib.parse.unquote(file_part.split("?", 1)[0])
    if file_part:
        base = ROOT if file_part.startswith("/") else path.parent
        resolved = (base / file_part.lstrip("/")).resolve()
        if resolved != ROOT and ROOT not in resolved.parents:
            problem(path, number, f"link points outside the repository: {target}")
            return 1
        if not resolved.exists():
            problem(path, number, f"link to a missing file: {target}")
            return 1
    else:
        resolved = path
    if anchor and resolved.is_file() and resolved.suffix.lower() == ".md":
        anchor = urllib.parse.unquote(anchor)
        if anchor not in anchors(resolved):
            where = "this file" if resolved == path else rel(resolved)
            problem(path, number, f"no heading with id #{anchor} in {where}: {target}")
    return 1


def check_links(path: Path) -> tuple[int, int]:
    internal = external = 0
    for number, target in links(path.read_text(encoding="utf-8")):
        if target is None:
            problem(path, number, "unterminated link")
        elif check_target(path, number, target):
            internal += 1
        else:
            external += 1
    return internal, external


def check_summary(docs: Path, chapters: list[Path]) -> int:
    summary = docs / "SUMMARY.md"
    if not summary.is_file():
        problem(summary, 1, "missing: the book's table of contents (mdBook)")
        return 0
    listed = set()
    for _, target in links(summary.read_text(encoding="utf-8")):
        if target and not EXTERNAL.match(target):
            listed.add((docs / urllib.parse.unquote(target.split("#", 1)[0])).resolve())
    for chapter in chapters:
        if chapter.resolve() not in listed:
            problem(chapter, 1, "chapter not listed in docs/SUMMARY.md")
    return len(listed)


# The settings the services read: `env_or("NAME", ..)`, `env_opt("NAME")`, `secret_env("NAME")`
# and the like in each service's code. Every one must be in docs/configuration.md, so the
# configuration chapter cannot drift from the code (a name built at run time, such as an SSO
# provider's `AUTH_<NAME>_*`, is documented by its pattern and not checked here).
SETTINGS_READERS = re.compile(r'\b(?:env_or|env_opt|env_list|env_duration|secret_env|env::var|var_os)\(\s*"([A-Z][A-Z0-9_]+)"')
SETTINGS_CODE = ["auth-service/src", "core-service/src", "edge-rest/src", "edge-graphql/src", "crates/service-runtime/src", "crates/edge-http/src", "crates/access-token/src", "crates/system-tables/src"]


def check_settings(configuration: Path) -> int:
    documented = configuration.read_text(encoding="utf-8") if configuration.is_file() else ""
    names: dict[str, tuple[Path, int]] = {}
    for folder in SETTINGS_CODE:
        for path in sorted((ROOT / folder).rglob("*.rs")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                for name in SETTINGS_READERS.findall(line):
                    names.setdefault(name, (path, number))
    for name, (path, number) in sorted(names.items()):
        if not re.search(rf"\b{name}\b", documented):
            problem(path, number, f"setting {name} is read here but not documented in docs/configuration.md")
    return len(names)


def main() -> int:
    readme = ROOT / "README.md"
    docs = ROOT / "docs"
    chapters = sorted(p for p in docs.glob("*.md") if p.name != "SUMMARY.md")
    files = [readme] + sorted(docs.glob("*.md"))
    internal = external = 0
    for path in files:
        if not path.is_file():
            problem(path, 1, "missing")
            continue
        i, e = check_links(path)
        internal += i
        external += e
    listed = check_summary(docs, chapters)
    settings = check_settings(docs / "configuration.md")
    readme_lines = 0
    if readme.is_file():
        readme_lines = len(readme.read_text(encoding="utf-8").splitlines())
        if readme_lines >= README_MAX_LINES:
            problem(readme, readme_lines, f"README.md has {readme_lines} lines; keep it under {README_MAX_LINES} (move detail into docs/)")
    for p in problems:
        print(p)
    if problems:
        print(f"check_docs: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(
        f"check_docs: OK: {len(files)} files, {internal} internal links checked, {external} external not fetched, "
        f"{listed} chapters in docs/SUMMARY.md, {settings} settings documented, README.md {readme_lines} lines"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
