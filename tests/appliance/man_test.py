#!/usr/bin/env python3
"""The man pages stay in step with the programs. doc/linecapd.8: every option `linecapd
--help` and `linecapd verify --help` list and every key of the example configuration
(config/linecap.yaml) is in it, the exit codes and test-only environment variables are
documented. doc/linecap.1: every command `linecap --help` names is described under
COMMANDS, every option its `linecap COMMAND --help` lists is in the page, and so is every
exit status. doc/linecap-{bind,hugepages,shield}.8: every option, command and exit status
the script's --help names. groff and `man --warnings -l` format every page without a
warning.
Exit 0 = pass, 1 = fail, 77 = skipped (with the reason printed)."""
import os
import re
import shutil
import subprocess
import sys


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def readable(roff):
    """What a reader sees: roff escapes and font requests removed."""
    text = roff.replace("\\-", "-").replace("\\(mu", "x")
    text = re.sub(r"\\f[BIRP]", "", text)
    text = re.sub(r"^\.(B|I|BR|IR|RB|BI|IB|RI|TP|PP|SS|SH|TH|br)\b ?", "", text, flags=re.M)
    return text.replace('"', "")


def options_of(usage):
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*|-[a-zA-Z])\b", usage))


def mentions(text, word):
    return re.search(r"(?<![\w-])" + re.escape(word) + r"\b", text) is not None


def formatting_problems(man_path):
    """groff's and man's warnings for one page ("" when it formats cleanly)."""
    problems = []
    groff = shutil.which("groff")
    if groff:
        r = subprocess.run([groff, "-man", "-ww", "-z", man_path], capture_output=True, text=True)
        if r.returncode != 0 or r.stderr.strip():
            problems.append(f"groff warnings in {man_path}:\n" + r.stderr)
    else:
        print("note: groff missing, formatting not checked", file=sys.stderr)
    man = shutil.which("man")
    if man:
        r = subprocess.run([man, "--warnings", "-l", man_path], capture_output=True, text=True,
                           env=dict(os.environ, MANWIDTH="80", MANPAGER="cat", PAGER="cat"))
        if r.returncode != 0 or r.stderr.strip():
            problems.append(f"man --warnings -l {man_path}:\n" + r.stderr)
    else:
        print("note: man missing, `man --warnings` not run", file=sys.stderr)
    return problems


def linecap_problems(src, linecap):
    """doc/linecap.1 against the tool's own help."""
    man_path = os.path.join(src, "doc", "linecap.1")
    with open(man_path) as f:
        roff = f.read()
    text = readable(roff)
    problems = []
    usage = subprocess.run([linecap, "--help"], capture_output=True, text=True, check=True).stdout
    commands = sorted(set(re.findall(r"^\s*linecap ([a-z][a-z-]*)\b", usage, flags=re.M)))
    if len(commands) < 5:
        problems.append(f"only {commands} read from linecap --help: its layout changed?")
    described = set(re.findall(r"^\.TP\n\.B ([a-z-]+)$", roff, flags=re.M))
    option_count = 0
    for command in commands:
        if command not in described:
            problems.append(f"command {command} (from linecap --help) has no entry under COMMANDS")
        own = subprocess.run([linecap, command, "--help"], capture_output=True, text=True, check=True).stdout
        for opt in sorted(options_of(own)):
            option_count += 1
            if not mentions(text, opt):
                problems.append(f"option {opt} (from linecap {command} --help) is not in doc/linecap.1")
    exit_part = usage[usage.index("exit status"):] if "exit status" in usage else ""
    for code in re.findall(r"(?:^|[;:] )(\d+) ", exit_part, flags=re.M):
        if not re.search(r"^\.TP\n" + code + r"$", roff, flags=re.M):
            problems.append(f"exit status {code} (from linecap --help) is not under EXIT STATUS")
    problems += formatting_problems(man_path)
    print(f"linecap.1 covers {len(commands)} commands and {option_count} of their options", file=sys.stderr)
    return problems


def script_problems(src, name):
    """doc/NAME.8 against scripts/NAME.sh --help (the boot helpers the units run)."""
    man_path = os.path.join(src, "doc", name + ".8")
    if not os.path.exists(man_path):
        return [f"{name} has no manual page ({man_path})"]
    with open(man_path) as f:
        roff = f.read()
    text = readable(roff)
    usage = subprocess.run(["bash", os.path.join(src, "scripts", name + ".sh"), "--help"],
                           capture_output=True, text=True, check=True).stdout
    problems = []
    for opt in sorted(options_of(usage)):
        if not mentions(text, opt):
            problems.append(f"option {opt} (from {name} --help) is not in doc/{name}.8")
    # Commands: the bare lower-case words of the usage lines ("NAME [--opt X] bind [ADDR...]").
    synopsis = usage[usage.index("Usage:"):].split("\n\n")[0] if "Usage:" in usage else ""
    commands = set()
    for line in synopsis.splitlines():
        words = re.sub(r"\[[^]]*\]", " ", line.replace("Usage:", "")).replace("|", " ").split()
        commands.update(w for w in words[1:] if re.fullmatch(r"[a-z]+", w))
    for command in sorted(commands):
        if not re.search(r"^\.TP\n\.B " + command + r"$", roff, flags=re.M):
            problems.append(f"command {command} (from {name} --help) is not under COMMANDS")
    exit_part = usage[usage.index("Exit status"):] if "Exit status" in usage else ""
    codes = re.findall(r"(\d+) [a-z]", exit_part)
    if not codes:
        problems.append(f"no exit status read from {name} --help: its layout changed?")
    for code in codes:
        if not re.search(r"^\.TP\n" + code + r"$", roff, flags=re.M):
            problems.append(f"exit status {code} (from {name} --help) is not under EXIT STATUS")
    return problems + formatting_problems(man_path)


def extcap_problems(src):
    """doc/linecap-extcap.1 against extcap/linecap-extcap --help."""
    man_path = os.path.join(src, "doc", "linecap-extcap.1")
    with open(man_path) as f:
        text = readable(f.read())
    usage = subprocess.run([sys.executable, os.path.join(src, "extcap", "linecap-extcap"), "--help"],
                           capture_output=True, text=True, check=True).stdout
    problems = [f"option {opt} (from linecap-extcap --help) is not in doc/linecap-extcap.1"
                for opt in sorted(options_of(usage)) if not mentions(text, opt)]
    return problems + formatting_problems(man_path)


def main():
    src = os.environ.get("LINECAP_SRC") or os.path.join(os.path.dirname(__file__), "..", "..")
    linecapd = os.environ.get("LINECAPD", "")
    man_path = os.path.join(src, "doc", "linecapd.8")
    with open(man_path) as f:
        roff = f.read()
    text = readable(roff)

    problems = []
    if not linecapd or not os.access(linecapd, os.X_OK):
        print("SKIP: linecapd not built (set LINECAPD)", file=sys.stderr)
        sys.exit(77)
    usage = subprocess.run([linecapd, "--help"], capture_output=True, text=True, check=True).stdout
    options = options_of(usage)
    for opt in sorted(options):
        if not mentions(text, opt):
            problems.append(f"option {opt} (from linecapd --help) is not in the man page")
    for command in sorted(set(re.findall(r"^\s*(?:Usage: )?linecapd ([a-z][a-z-]*)\b", usage, flags=re.M))):
        if not re.search(r"^\.B linecapd " + command + r"$", roff, flags=re.M):
            problems.append(f"command {command} (from linecapd --help) is not in the SYNOPSIS")
        own = subprocess.run([linecapd, command, "--help"], capture_output=True, text=True, check=True).stdout
        for opt in sorted(options_of(own)):
            if not mentions(text, opt):
                problems.append(f"option {opt} (from linecapd {command} --help) is not in the man page")
    for code in re.findall(r"\b(\d+) (?:ok|runtime failure|usage|configuration)", usage):
        if not re.search(r"^" + code + r"$", text, flags=re.M):
            problems.append(f"exit code {code} is not under EXIT STATUS")
    for var in ("LINECAP_SYSFS", "LINECAP_PROC", "NOTIFY_SOCKET", "WATCHDOG_USEC"):
        if var not in text:
            problems.append(f"environment variable {var} is not documented")
    for signame in ("SIGHUP", "SIGTERM", "SIGINT"):
        if signame not in text:
            problems.append(f"signal {signame} is not documented")

    # Every key of the example configuration, by its last path component under its section.
    try:
        import yaml
    except ImportError:
        yaml = None
    if yaml is None:
        print("note: python3-yaml missing, configuration keys not compared", file=sys.stderr)
    else:
        with open(os.path.join(src, "config", "linecap.yaml")) as f:
            cfg = yaml.safe_load(f)

        def keys(node, path):
            if isinstance(node, dict):
                for k, v in node.items():
                    yield from keys(v, path + [str(k)])
                    yield path + [str(k)]
            elif isinstance(node, list):
                for item in node:
                    yield from keys(item, path)

        for path in sorted(set(map(tuple, keys(cfg, [])))):
            leaf = path[-1]
            # nested keys are written "rotate.size_mb" / "retention.max_age" in the page
            name = ".".join(path[1:]) if len(path) > 2 and path[0] == "output" else leaf
            if path[0] == "capture" and len(path) > 2:
                name = leaf  # workers[].lcore / .queues
            if not re.search(r"(?<![\w.])" + re.escape(name) + r"\b", text):
                problems.append(f"configuration key {'.'.join(path)} is not in the man page")

    problems += formatting_problems(man_path)

    linecap = os.environ.get("LINECAP") or os.path.join(os.environ.get("LINECAP_BUILD", ""), "src", "linecap")
    if not os.access(linecap, os.X_OK):
        print("SKIP: linecap not built (set LINECAP or LINECAP_BUILD)", file=sys.stderr)
        sys.exit(77)
    problems += linecap_problems(src, linecap)
    for name in ("linecap-bind", "linecap-hugepages", "linecap-shield"):
        problems += script_problems(src, name)
    problems += extcap_problems(src)

    if problems:
        fail("\n  ".join(["the man pages are out of date:"] + problems))
    print(f"man page covers {len(options)} options and the example configuration's keys", file=sys.stderr)


if __name__ == "__main__":
    main()
