"""linecapd's YAML configuration, built as a dict and written in one place.

    cfg = config.daemon("net_af_xdp0,iface=veth0", "/tmp/out", listen="127.0.0.1:9100",
                        port={"rx_descriptors": 4096}, output={"index": False})
    config.write("/tmp/cfg.yaml", cfg, "bench/capture.py")

daemon() gives the smallest config a test or a benchmark runs: one port, output into a
directory, metrics on LISTEN, info logging, lcores 0-1; every keyword argument is merged into
its section (a dict into a dict, anything else replaces). An output={"volumes": [...]} drops
the output directory (linecapd takes one or the other). Key names are the fields of
src/config/config.hpp. dump() writes block YAML with every string double-quoted (JSON
escapes are valid YAML), so paths and filters need no care.
"""

import json
import re

PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def merge(base, extra):
    """BASE with EXTRA merged in (nested dicts merged, everything else replaced); a new dict."""
    out = dict(base)
    for k, v in extra.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def daemon(device, outdir, listen, *, name="p0", lcores="0-1", port=None, **sections):
    cfg = {
        "eal": {"lcores": lcores},
        "ports": [merge({"name": name, "device": device}, port or {})],
        "output": {"directory": outdir},
        "metrics": {"enabled": True, "listen": listen},
        "log": {"level": "info"},
    }
    cfg = merge(cfg, sections)
    if cfg["output"].get("volumes"):  # output.volumes replaces output.directory
        del cfg["output"]["directory"]
    return cfg


def scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(str(v))


def _lines(value, indent):
    pad = " " * indent
    if isinstance(value, dict):
        for k, v in value.items():
            key = k if PLAIN_KEY.match(str(k)) else json.dumps(str(k))
            if isinstance(v, (dict, list)) and v:
                yield f"{pad}{key}:"
                yield from _lines(v, indent + 2)
            else:
                yield f"{pad}{key}: {flow(v)}"
    else:
        for item in value:
            first = True
            for line in _lines(item, indent + 2) if isinstance(item, (dict, list)) and item else [None]:
                if line is None:
                    yield f"{pad}- {flow(item)}"
                elif first:
                    yield f"{pad}- {line[indent + 2:]}"
                else:
                    yield line
                first = False


def flow(v):
    """V as a YAML flow value (one line)."""
    if isinstance(v, dict):
        return "{}" if not v else "{ " + ", ".join(f"{k}: {flow(x)}" for k, x in v.items()) + " }"
    if isinstance(v, list):
        return "[" + ", ".join(flow(x) for x in v) + "]"
    return scalar(v)


def dump(cfg, header=None):
    text = "\n".join(_lines(cfg, 0)) + "\n"
    return (f"# written by {header}\n" if header else "") + text


def write(path, cfg, header=None, extra_yaml=""):
    """Write CFG to PATH; EXTRA_YAML (top-level sections as text) is appended verbatim."""
    with open(path, "w") as f:
        f.write(dump(cfg, header))
        if extra_yaml:
            f.write(extra_yaml.rstrip("\n") + "\n")


def _value(text):
    """A setting's value: JSON when it parses (numbers, true, {"a": 1}), a string otherwise."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def settings(items):
    """{"port": {...}, SECTION: {...}} from "SECTION.KEY[.KEY...]=VALUE" words ("port." = the
    port's own keys)."""
    out = {}
    for item in items:
        path, eq, value = item.partition("=")
        if not eq or "." not in path:
            raise ValueError(f"setting {item!r} is not SECTION.KEY=VALUE")
        node = out
        *parents, leaf = path.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = _value(value)
    return out


def main(argv=None):
    """python3 -m linecap_harness.config FILE DEVICE OUTDIR LISTEN [SECTION.KEY=VALUE]...
        [--header WHO] [--extra-yaml TEXT]

    Writes daemon(DEVICE, OUTDIR, LISTEN) with those settings to FILE: "port.KEY" is a key
    of the port, VALUE is JSON when it parses (2, true, {"size_mb": 64}), else a string.
    EXTRA_YAML is appended verbatim (more top-level sections)."""
    import argparse
    import sys
    ap = argparse.ArgumentParser(usage=main.__doc__)
    ap.add_argument("file")
    ap.add_argument("device")
    ap.add_argument("outdir")
    ap.add_argument("listen")
    ap.add_argument("settings", nargs="*")
    ap.add_argument("--header")
    ap.add_argument("--extra-yaml", default="")
    a = ap.parse_args(argv)
    try:
        sections = settings(a.settings)
    except ValueError as e:
        print(f"config: {e}", file=sys.stderr)
        return 2
    port = sections.pop("port", {})
    write(a.file, daemon(a.device, a.outdir, a.listen, port=port, **sections), a.header, a.extra_yaml)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
