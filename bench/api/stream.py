#!/usr/bin/env python3
"""stream.py --url URL --token-file FILE: one streaming API client of the capture-rate part
of bench/api/run.sh. Asks for URL (a large answer) with the bearer token of FILE ("NAME
TOKEN", as `api.tokens_file`), reads the answer as fast as it comes and asks again whenever
an answer ends, until SIGTERM (or --max-seconds). Prints "streaming" on stdout when the
first body bytes arrive, so the caller can start its window once every query streams;
SIGUSR1 zeroes the counts (the window starts); at the end one JSON line: body bytes
received since then (chunk framing included), answers started, statuses seen (a 503
while earlier queries still wind down is retried after 0.2 s).

The client stands for an analyst's machine elsewhere; here it shares the appliance's CPUs
at normal priority (pessimistic for capture: what it costs is counted against capture
too). Every socket operation times out after 0.5 s, so a signal is acted on within it."""
import argparse
import json
import signal
import socket
import sys
import time
import urllib.parse

STOP = False
TOTALS = {"bytes": 0, "answers": 0, "statuses": {}, "errors": 0, "first_error": ""}


def token_of(path):
    with open(path) as f:
        for line in f:
            fields = line.split()
            if len(fields) == 2 and not fields[0].startswith("#"):
                return fields[1]
    raise SystemExit(f"{path}: no 'NAME TOKEN' line")


def announce_streaming(_state=[]):  # noqa: B006 (once per process)
    if not _state:
        _state.append(True)
        print("streaming", flush=True)


def one_answer(url, token, until):
    """One request; adds what it received to TOTALS. Returns its status when the answer
    ends, the connection breaks, a stop is asked for, or `until` is reached."""
    u = urllib.parse.urlsplit(url)
    target = u.path + ("?" + u.query if u.query else "")
    with socket.create_connection((u.hostname, u.port), timeout=0.5) as s:
        s.sendall(f"GET {target} HTTP/1.1\r\nHost: {u.netloc}\r\nAuthorization: Bearer {token}\r\n"
                  f"Connection: close\r\n\r\n".encode())
        head, in_body, buf = b"", False, bytearray(1 << 20)
        while not STOP and time.monotonic() < until:
            try:
                n = s.recv_into(buf)
            except socket.timeout:
                continue
            if n == 0:
                break
            if not in_body:
                head += bytes(buf[:n])
                end = head.find(b"\r\n\r\n")
                if end < 0:
                    continue
                in_body = True
                status = head.split(b" ", 2)[1].decode()
                TOTALS["statuses"][status] = TOTALS["statuses"].get(status, 0) + 1
                if status != "200":
                    return status
                n = len(head) - end - 4
            TOTALS["bytes"] += n
            if n:
                announce_streaming()
    return "200"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--token-file", required=True)
    ap.add_argument("--max-seconds", type=float, default=600, help="end by itself after this long")
    args = ap.parse_args()
    token = token_of(args.token_file)

    def stop(*_):
        global STOP
        STOP = True

    def mark(*_):
        TOTALS.update(bytes=0, answers=0, statuses={}, errors=0, first_error="")

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGUSR1, mark)
    until = time.monotonic() + args.max_seconds
    while not STOP and time.monotonic() < until:
        TOTALS["answers"] += 1
        try:
            status = one_answer(args.url, token, until)
        except OSError as e:
            TOTALS["errors"] += 1
            TOTALS["first_error"] = TOTALS["first_error"] or str(e)
            status = "error"
        if status != "200" and not STOP:
            time.sleep(0.2)
    print(json.dumps(TOTALS), flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
