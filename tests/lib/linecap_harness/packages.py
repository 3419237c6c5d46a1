"""What an install profile brings (scripts/install-deps.sh PROFILE), read from this machine's
dpkg database: the packages a bare Debian root would hold after installing it, and the
programs they put on PATH.

A bare root is what mmdebstrap's minbase makes: the Essential and Priority: required packages.
Installing a profile adds its packages and, recursively, their Depends and Pre-Depends (not
Recommends: install-deps.sh passes --no-install-recommends); of alternatives ("a | b") the
first that is installed here counts, as apt would have chosen it when it installed them.

  python3 -m linecap_harness.packages closure PACKAGE...     the packages, one a line
  python3 -m linecap_harness.packages path DIR PACKAGE...    DIR: a link for every program
                                                             of theirs (a PATH of only them)
"""

import os
import re
import sys

STATUS = "/var/lib/dpkg/status"
INFO = "/var/lib/dpkg/info"
BIN_DIRS = ("/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin")


def installed():
    """name -> fields of every installed package (the last stanza of a name wins)."""
    packages = {}
    with open(STATUS, encoding="utf-8", errors="replace") as f:
        for stanza in f.read().split("\n\n"):
            fields, key = {}, None
            for line in stanza.splitlines():
                if line.startswith((" ", "\t")) and key:
                    fields[key] += "\n" + line
                elif ":" in line:
                    key, _, value = line.partition(":")
                    fields[key] = value.strip()
            if fields.get("Package") and " installed" in fields.get("Status", ""):
                packages[fields["Package"]] = fields
    return packages


def _names(field):
    """A Depends-like field as a list of alternatives, each a list of package names."""
    out = []
    for clause in field.split(","):
        names = [re.sub(r"[\s(\[<].*$", "", a.strip()).split(":")[0] for a in clause.split("|")]
        names = [n for n in names if n]
        if names:
            out.append(names)
    return out


def closure(wanted, packages=None):
    packages = packages if packages is not None else installed()
    provides = {}
    for name, fields in packages.items():
        for (virtual, *_rest) in _names(fields.get("Provides", "")):
            provides.setdefault(virtual, []).append(name)

    def real(name):
        if name in packages:
            return name
        return next(iter(provides.get(name, [])), None)

    todo = [n for n, f in packages.items() if f.get("Essential") == "yes" or f.get("Priority") == "required"]
    missing = [n for n in wanted if real(n) is None]
    if missing:
        raise SystemExit(f"packages: not installed here: {' '.join(missing)}")
    todo += [real(n) for n in wanted]
    seen = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        fields = packages[name]
        for alternatives in _names(fields.get("Depends", "")) + _names(fields.get("Pre-Depends", "")):
            chosen = next((real(a) for a in alternatives if real(a)), None)
            if chosen:
                todo.append(chosen)
    return seen


def _owners():
    """path -> package, from dpkg's file lists."""
    owners = {}
    for entry in os.listdir(INFO):
        if entry.endswith(".list"):
            package = entry[: -len(".list")].split(":")[0]
            with open(os.path.join(INFO, entry), encoding="utf-8", errors="replace") as f:
                for line in f:
                    owners[line.rstrip("\n")] = package
    return owners


def programs(packages):
    """command name -> path of every program the packages put on PATH (links made by
    update-alternatives included when what they point to is one of theirs)."""
    owners = _owners()
    found = {}
    for directory in BIN_DIRS:
        if not os.path.isdir(directory) or os.path.islink(directory):
            continue  # a merged /usr: /bin is a link to usr/bin, read once as /usr/bin
        for name in os.listdir(directory):
            path = os.path.join(directory, name)
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                continue
            # Packages name their files as they ship them: /bin/bash is /usr/bin/bash on a
            # merged /usr.
            candidates = [p for q in (path, os.path.realpath(path)) for p in (q, re.sub(r"^/usr/(s?bin)/", r"/\1/", q))]
            owner = next((owners[c] for c in candidates if c in owners), None)
            if owner in packages and name not in found:
                found[name] = path
    return found


def main(argv):
    if len(argv) >= 2 and argv[0] == "closure":
        print("\n".join(sorted(closure(argv[1:]))))
        return 0
    if len(argv) >= 3 and argv[0] == "path":
        directory = argv[1]
        os.makedirs(directory, exist_ok=True)
        for name, path in programs(closure(argv[2:])).items():
            os.symlink(path, os.path.join(directory, name))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
