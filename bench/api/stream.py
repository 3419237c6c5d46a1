#!/usr/bin/env python3
"""stream.py --url URL --token-file FILE --until EPOCH_S: one streaming API client of the
capture-rate part of bench/api/run.sh. Asks for URL (a large answer) with the bearer token
of FILE ("NAME TOKEN", as `api.tokens_file`), reads the answer as fast as it comes, asks
again whenever an answer ends, and stops at EPOCH_S (wall clock, so clients started one
after another stop together, with the window). Prints one JSON line: body bytes received
(chunk framing included), answers started, and the statuses seen (a 503 while an earlier
window's queries still wind down is retried after 0.2 s).

The client stands for an analyst's machine elsewhere; here it shares the appliance's CPUs
at normal priority (pessimistic for capture: what it costs is counted against capture
too). At idle priority it could miss a whole window on a loaded machine and measure
nothing. Every socket operation times out (0.5 s), so it always ends by EPOCH_S + 1 s."""
import argparse
import json
import socket
import time
import urllib.parse


def token_of(path):
    with open(path) as f:
        for line in f:
            fields = line.split()
            if len(fields) == 2 and not fields[0].startswith("#"):
                return fields[1]
    raise SystemExit(f"{path}: no 'NAME TOKEN' line")


def one_answer(url, token, until, totals):
    """One request; adds what it received to totals. Returns when the answer ends, the
    connection breaks, or `until` is reached."""
    u = urllib.parse.urlsplit(url)
    target = u.path + ("?" + u.query if u.query else "")
    with socket.create_connection((u.hostname, u.port), timeout=0.5) as s:
        s.sendall(f"GET {target} HTTP/1.1\r\nHost: {u.netloc}\r\nAuthorization: Bearer {token}\r\n"
                  f"Connection: close\r\n\r\n".encode())
        head, body, buf = b"", None, bytearray(1 << 20)
        while time.time() < until:
            try:
                n = s.recv_into(buf)
            except socket.timeout:
                continue
            if n == 0:
                break
            if body is None:
                head += bytes(buf[:n])
                end = head.find(b"\r\n\r\n")
                if end < 0:
                    continue
                status = head.split(b" ", 2)[1].decode()
                totals["statuses"][status] = totals["statuses"].get(status, 0) + 1
                body = len(head) - end - 4
                totals["bytes"] += body
                if status != "200":
                    return status
            else:
                totals["bytes"] += n
    return "200"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--token-file", required=True)
    ap.add_argument("--until", type=float, required=True, help="wall-clock time (s since the epoch) to stop at")
    args = ap.parse_args()
    token = token_of(args.token_file)
    totals = {"bytes": 0, "answers": 0, "statuses": {}, "errors": 0, "first_error": ""}
    while time.time() < args.until:
        totals["answers"] += 1
        try:
            status = one_answer(args.url, token, args.until, totals)
        except OSError as e:
            totals["errors"] += 1
            totals["first_error"] = totals["first_error"] or str(e)
            status = "error"
        if status != "200":
            time.sleep(0.2)
    print(json.dumps(totals), flush=True)


if __name__ == "__main__":
    main()
