#!/usr/bin/env python3
"""README.md orients and points into doc/: at most 250 lines, and no commit hashes or
dated measurements in it (those go to doc/perf/ or the commit message; doc/contributing.md).
Exit 0 = pass, 1 = fail."""
import os
import re

from report import report

MAX_LINES = 250


def main():
    src = os.environ.get("LINECAP_SRC") or os.path.join(os.path.dirname(__file__), "..", "..")
    with open(os.path.join(src, "README.md")) as f:
        text = f.read()
    problems = []
    lines = text.count("\n")
    if lines > MAX_LINES:
        problems.append(f"README.md has {lines} lines, more than {MAX_LINES}: move the detail into doc/")
    for n, line in enumerate(text.split("\n"), start=1):
        for word in re.findall(r"(?<![\w/.-])[0-9a-f]{7,40}(?![\w/.-])", line):
            if re.search(r"[a-f]", word) and re.search(r"[0-9]", word):
                problems.append(f"README.md:{n}: '{word}' looks like a commit hash")
        if re.search(r"\b20\d\d-\d\d-\d\d\b|\b\d\d:\d\d(?:[-–]\d\d:\d\d)? UTC\b", line):
            problems.append(f"README.md:{n}: a date or time: dated figures go to doc/perf/")
    report(problems, f"README.md: {lines} lines, no commit hash, no date")


if __name__ == "__main__":
    main()
