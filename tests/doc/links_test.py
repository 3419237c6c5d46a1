#!/usr/bin/env python3
"""Every relative link in README.md and the Markdown files under doc/ resolves: the file
or directory exists in the source tree, and a #fragment names a heading of the Markdown
file it points into (as GitHub and most renderers derive anchors from headings). Links in
code spans and code blocks are not links. Exit 0 = pass, 1 = fail."""
import os
import re

from report import report

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def prose(text):
    """The text without fenced code blocks and code spans."""
    text = re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(path, cache={}):
    if path not in cache:
        with open(path) as f:
            text = f.read()
        text = re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", text, flags=re.M | re.S)
        found, seen = set(), {}
        for m in re.finditer(r"^#{1,6}\s+(.*?)\s*#*\s*$", text, flags=re.M):
            slug = m.group(1).strip().lower()
            slug = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", slug)  # a link's text
            slug = re.sub(r"[^\w\- ]", "", slug).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            found.add(slug if n == 0 else f"{slug}-{n}")
        found.update(re.findall(r'<a\s+(?:name|id)="([^"]+)"', text))
        cache[path] = found
    return cache[path]


def documents(src):
    yield os.path.join(src, "README.md")
    for root, dirs, files in os.walk(os.path.join(src, "doc")):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".md"):
                yield os.path.join(root, name)


def main():
    src = os.path.abspath(os.environ.get("LINECAP_SRC") or os.path.join(os.path.dirname(__file__), "..", ".."))
    problems, checked = [], 0
    for doc in documents(src):
        with open(doc) as f:
            text = prose(f.read())
        for m in LINK.finditer(text):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
                continue
            checked += 1
            where = f"{os.path.relpath(doc, src)}: link '{target}'"
            path, _, fragment = target.partition("#")
            resolved = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
            if not resolved.startswith(src + os.sep) and resolved != src:
                problems.append(f"{where} leaves the source tree")
                continue
            if not os.path.exists(resolved):
                problems.append(f"{where}: {os.path.relpath(resolved, src)} does not exist")
                continue
            if fragment and resolved.endswith(".md") and fragment not in anchors(resolved):
                problems.append(f"{where}: no heading '#{fragment}' in {os.path.relpath(resolved, src)}")
    report(problems, f"{checked} relative links resolve")


if __name__ == "__main__":
    main()
