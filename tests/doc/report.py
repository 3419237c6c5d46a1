"""The end of every doc test: the problems found, one per line, and exit 1; or the
summary of what was checked, and exit 0."""
import sys


def report(problems, summary):
    if problems:
        print("FAIL:\n  " + "\n  ".join(problems), file=sys.stderr)
        sys.exit(1)
    print(summary)
