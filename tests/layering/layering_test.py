#!/usr/bin/env python3
"""The layers the build enforces (src/meson.build; doc/architecture.md, "Layers").

    layering_test.py COMPILE_COMMANDS SRC_DIR LAYER=VISIBLE,...:USES,... ...

Each argument is what src/meson.build lets LAYER include (VISIBLE: its own directory and
its lower layers') and the layers its row of the table names (USES: the ones directly
below it). For every layer this takes the command the build really compiles one of the
layer's sources with (compile_commands.json, so a widened include path in the build is
caught, not just a wrong table) and checks, with translation units of its own:

1. the layer sees exactly its VISIBLE directories: a header of each is found, a header of
   every other layer is not (__has_include);
2. every header of the layer preprocesses with that command (all of them in one
   translation unit): an upward include in a header that no source of its own layer
   includes is caught too (the build catches it in the sources);
3. an upward include fails to compile: the format layer's command on a file including
   "store/extract.hpp" stops with "No such file or directory";
4. every edge of the table is used: for each layer USES names, some file of LAYER includes
   one of its headers, so the table is the graph the code has and not a wider one; and
   none is implied by another edge of the same row.
"""
import concurrent.futures
import json
import os
import pathlib
import shlex
import subprocess
import sys
import tempfile


def layer_command(entries, layer):
    """The compile command of one source of liblinecap_LAYER, minus its input, output and
    dependency-file arguments; and the directory it runs in."""
    for e in entries:
        if f"liblinecap_{layer}.a.p/" not in e.get("output", ""):
            continue
        argv = e["arguments"] if "arguments" in e else shlex.split(e["command"])
        if os.path.basename(argv[0]) == "ccache":
            argv = argv[1:]
        out = []
        skip = False
        for a in argv:
            if skip:
                skip = False
            elif a in ("-o", "-c", "-MQ", "-MF", "-MT"):
                skip = True
            elif a in ("-MD", "-MMD") or a.startswith("-fdiagnostics-color"):
                pass
            else:
                out.append(a)
        return out, e["directory"]
    return None, None


def run(argv, cwd, source_text, extra):
    with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as f:
        f.write(source_text)
        path = f.name
    try:
        p = subprocess.run(argv + extra + [path], cwd=cwd, capture_output=True, text=True,
                           env=dict(os.environ, LC_ALL="C"))
        return p.returncode, p.stderr
    finally:
        os.unlink(path)


def main():
    compile_commands, src = sys.argv[1], pathlib.Path(sys.argv[2])
    visible = {}
    uses = {}
    for arg in sys.argv[3:]:
        name, _, rest = arg.partition("=")
        seen, _, below = rest.partition(":")
        visible[name] = set(seen.split(","))
        uses[name] = [b for b in below.split(",") if b]
    entries = json.load(open(compile_commands))
    # One header per layer to probe for.
    probe = {}
    for layer in visible:
        headers = sorted(p.name for p in (src / layer).glob("*.hpp"))
        if not headers:
            print(f"FAIL: src/{layer}/ has no header to probe for")
            return 1
        probe[layer] = f"{layer}/{headers[0]}"

    failures = []
    # 4. Every declared edge, in the layer's own files.
    edges = 0
    for layer, below in uses.items():
        included = set()
        for f in sorted((src / layer).glob("*.[ch]pp")):
            for line in f.read_text().splitlines():
                if line.startswith('#include "') and "/" in line:
                    included.add(line.split('"')[1].split("/")[0])
        for b in below:
            edges += 1
            if b not in included:
                failures.append(f"{layer} -> {b} is declared (src/meson.build) but no file of src/{layer}/ "
                                f"includes a header of {b}/: delete the edge")
            through = [o for o in below if o != b and b in visible.get(o, ())]
            if through:
                failures.append(f"{layer} -> {b} is declared (src/meson.build) but {layer} sees {b} through "
                                f"{through[0]} already: the row lists only the layers directly below")

    jobs = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for layer, seen in visible.items():
            argv, cwd = layer_command(entries, layer)
            if argv is None:
                failures.append(f"{layer}: no source of liblinecap_{layer} in {compile_commands}")
                continue
            # 1. Exactly the declared directories, through the real command.
            checks = []
            for other, header in probe.items():
                if other in seen:
                    checks.append(f'#if !__has_include("{header}")\n'
                                  f'#error "{layer}/ cannot include {header}, which it may use"\n#endif\n')
                else:
                    checks.append(f'#if __has_include("{header}")\n'
                                  f'#error "{layer}/ can include {header}: an upward include would compile"\n#endif\n')
            jobs.append((f"{layer}: visibility", pool.submit(run, argv, cwd, "".join(checks), ["-fsyntax-only"])))
            # 2. Every header of the layer with the layer's own command: one translation
            #    unit including them all (an upward include in any of them is a missing
            #    file, named in the error), not one compiler run per header.
            text = "".join(f'#include "{layer}/{h.name}"\n' for h in sorted((src / layer).glob("*.hpp")))
            jobs.append((f"{layer}: its headers", pool.submit(run, argv, cwd, text, ["-E", "-o", os.devnull])))
        # 3. The upward include itself.
        argv, cwd = layer_command(entries, "format")
        upward = None
        if argv is not None:
            upward = pool.submit(run, argv, cwd, '#include "store/extract.hpp"\n', ["-fsyntax-only"])

        for what, job in jobs:
            rc, err = job.result()
            if rc != 0:
                failures.append(f"{what}:\n{err.strip()}")
        checked = len(jobs) + edges
        if upward is not None:
            rc, err = upward.result()
            checked += 1
            if rc == 0:
                failures.append('format: #include "store/extract.hpp" compiled: the layers are not enforced')
            elif "store/extract.hpp" not in err or "No such file or directory" not in err:
                failures.append(f'format: #include "store/extract.hpp" failed, but not as a missing file:\n{err.strip()}')
            else:
                print("format including store/extract.hpp fails as it must:",
                      next(line for line in err.splitlines() if "No such file" in line))

    for f in failures:
        print("FAIL:", f)
    print(f"{len(visible)} layers, {checked} checks, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
