#!/usr/bin/env python3
"""What the archiver left in the store, checked against the capture directory. The store is
read with curl's own SigV4 (--aws-sigv4), not with linecap's client. Environment: rgw.sh's
s3.env (S3_ENDPOINT, S3_REGION, S3_BUCKET, S3_ACCESS_KEY, S3_SECRET_KEY).

  archive_check.py verify DIR PREFIX [--all]
      every NAME.archived in DIR: its stored form, index and manifest objects are under
      PREFIX, each object's bytes are the local file's, its linecap-sha256 their SHA-256,
      the capture object's linecap-capture-sha256 the manifest's sha256; PREFIX/
      linecap-store.json is format 1. With --all, every finished file of DIR with a
      manifest is archived. Prints "N files archived and verified".
  archive_check.py uploads PREFIX      unfinished multipart uploads under PREFIX/ (a number)
  archive_check.py keys PREFIX         the keys under PREFIX/, one a line
Exit 0 = ok, 1 = a difference (named)."""
import glob
import hashlib
import json
import os
import subprocess
import sys
import urllib.parse
import xml.etree.ElementTree as ET

ENV = os.environ
NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


def curl(path, query="", head=False):
    url = f"{ENV['S3_ENDPOINT']}/{ENV['S3_BUCKET']}/{urllib.parse.quote(path)}"
    if query:
        url += "?" + query
    cmd = ["curl", "-s", "--max-time", "60", "--aws-sigv4", f"aws:amz:{ENV.get('S3_REGION', 'us-east-1')}:s3",
           "--user", f"{ENV['S3_ACCESS_KEY']}:{ENV['S3_SECRET_KEY']}", "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD",
           "-w", "\n%{http_code}"]
    cmd += ["-I"] if head else []
    out = subprocess.run(cmd + [url], capture_output=True, check=True).stdout
    body, _, status = out.rpartition(b"\n")
    return int(status), body


def head(key):
    status, text = curl(key, head=True)
    if status != 200:
        return None
    headers = {}
    for line in text.decode("latin-1").splitlines():
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return headers


def get(key):
    status, body = curl(key)
    return body if status == 200 else None


def keys(prefix):
    out, token = [], None
    while True:
        q = "list-type=2&prefix=" + urllib.parse.quote(prefix + "/", safe="")
        if token:
            q = "continuation-token=" + urllib.parse.quote(token, safe="") + "&" + q
        status, body = curl("", q)
        if status != 200:
            sys.exit(f"listing {prefix}/: HTTP {status}: {body[:200]!r}")
        root = ET.fromstring(body)
        out += [c.find(NS + "Key").text for c in root.findall(NS + "Contents")]
        token = root.findtext(NS + "NextContinuationToken")
        if not token:
            return out


def uploads(prefix):
    status, body = curl("", "prefix=" + urllib.parse.quote(prefix + "/", safe="") + "&uploads=")
    if status != 200:
        sys.exit(f"listing uploads under {prefix}/: HTTP {status}")
    return len(ET.fromstring(body).findall(NS + "Upload"))


def sha(data):
    return hashlib.sha256(data).hexdigest()


def verify(directory, prefix, require_all):
    problems = []
    description = get(prefix + "/linecap-store.json")
    if description is None or json.loads(description).get("format") != 1:
        problems.append(f"{prefix}/linecap-store.json: {description!r}")
    archived = sorted(p[: -len(".archived")] for p in glob.glob(directory + "/*.archived"))
    if require_all:
        for m in glob.glob(directory + "/*.manifest"):
            if m[: -len(".manifest")] not in archived:
                problems.append(f"{m[: -len('.manifest')]}: finished and manifested, not archived")
    for capture in archived:
        name = os.path.basename(capture)
        manifest_bytes = open(capture + ".manifest", "rb").read()
        manifest = json.loads(manifest_bytes)
        stored = name + ".zst" if os.path.exists(capture + ".zst") else name
        want = manifest["compressed"]["sha256"] if stored.endswith(".zst") else manifest["sha256"]
        objects = [(stored, want, manifest["sha256"])]
        if os.path.exists(capture + ".idx"):
            objects.append((name + ".idx", sha(open(capture + ".idx", "rb").read()), None))
        objects.append((name + ".manifest", sha(manifest_bytes), None))
        for obj, want_sha, capture_sha in objects:
            key = f"{prefix}/{obj}"
            h = head(key)
            if h is None:
                problems.append(f"{key}: missing")
                continue
            data = get(key)
            if data is None or sha(data) != want_sha:
                problems.append(f"{key}: its bytes are not the local file's (sha256 {data and sha(data)}, want {want_sha})")
            if h.get("x-amz-meta-linecap-sha256") != want_sha:
                problems.append(f"{key}: linecap-sha256 {h.get('x-amz-meta-linecap-sha256')}, want {want_sha}")
            if capture_sha and h.get("x-amz-meta-linecap-capture-sha256") != capture_sha:
                problems.append(f"{key}: linecap-capture-sha256 {h.get('x-amz-meta-linecap-capture-sha256')}")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        return 1
    print(f"{len(archived)} files archived and verified")
    return 0


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    cmd = sys.argv[1]
    if cmd == "verify":
        sys.exit(verify(sys.argv[2], sys.argv[3], "--all" in sys.argv[4:]))
    if cmd == "uploads":
        print(uploads(sys.argv[2]))
    elif cmd == "keys":
        print("\n".join(keys(sys.argv[2])))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
