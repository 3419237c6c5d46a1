"""The Prometheus text exposition format (0.0.4) as linecapd serves it on /metrics."""

import math
import re
import urllib.request

SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?$")
NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """[(name, {label: value}, value)]; a line that is neither a comment nor a sample raises."""
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            raise ValueError(f"unparsable exposition line: {line!r}")
        samples.append((m.group(1), dict(LABEL.findall(m.group(2) or "")), float(m.group(3))))
    return samples


def names(text):
    """Every metric name the text declares (# TYPE) or has a sample of."""
    found = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            found.add(line.split()[2])
        elif line and not line.startswith("#"):
            found.add(NAME.match(line).group(0))
    return found


def exact(value):
    """An integral value as int (counters print as integers), anything else unchanged."""
    return int(value) if math.isfinite(value) and value == int(value) else value


class Scrape:
    """One answer of /metrics: its text and its samples."""

    def __init__(self, text):
        self.text = text
        self.samples = parse(text)

    def matching(self, name, **want):
        """(labels, value) of NAME's samples whose labels include WANT."""
        return [(labels, v) for n, labels, v in self.samples
                if n == name and all(labels.get(k) == w for k, w in want.items())]

    def total(self, name, **want):
        """Sum of NAME's samples whose labels include WANT (0 when none); exact for counters."""
        return exact(sum(v for _, v in self.matching(name, **want)))

    def values(self, name):
        return [v for _, v in self.matching(name)]

    def label_values(self, name, label):
        """The distinct values LABEL takes among NAME's samples, sorted."""
        return sorted({labels[label] for labels, _ in self.matching(name) if label in labels})


def fetch(url, timeout=2.0):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def scrape(url, timeout=2.0):
    return Scrape(fetch(url, timeout))


def reachable(url, timeout=2.0):
    """True when URL answers with a parsable exposition."""
    try:
        scrape(url, timeout)
        return True
    except Exception:
        return False


def main(argv=None):
    """python3 -m linecap_harness.prometheus sum URL|FILE NAME [LABEL=VALUE]...

    Prints the sum of NAME's samples with those labels (0 when none) from a live endpoint
    (http://...) or a saved scrape. Exit 1 when the endpoint does not answer.
    """
    import sys
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 3 or args[0] != "sum" or any("=" not in a for a in args[3:]):
        print(main.__doc__, file=sys.stderr)
        return 2
    source, name = args[1], args[2]
    want = dict(a.split("=", 1) for a in args[3:])
    try:
        if source.startswith(("http://", "https://")):
            text = fetch(source)
        else:
            with open(source) as f:
                text = f.read()
    except Exception as e:
        print(f"prometheus: {source}: {e}", file=sys.stderr)
        return 1
    print(Scrape(text).total(name, **want))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
