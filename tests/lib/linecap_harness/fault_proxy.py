"""A fault-injecting HTTP proxy on loopback, in front of an object store: each request is
passed on unchanged (SigV4 signs what the client sent, Host included, so the store accepts
it), answered 503 SlowDown, or stalled, as a control file says at the moment the request
arrives. Every connection carries one request (the proxy asks for Connection: close), so
each request is decided on its own.

  python3 -m linecap_harness.fault_proxy --upstream HOST:PORT --control FILE --port-file FILE

The control file holds one line, re-read for every request:
  pass          forward it
  503 N         answer the next N requests 503 (then pass)
  stall S       hold the next request S seconds without an answer, then close it (then pass)
The proxy writes the port it listens on to --port-file, and one line per decision to stdout.
"""
import argparse
import os
import socket
import sys
import threading
import time

_lock = threading.Lock()


def _decide(control):
    """The mode for one request, counting a 503 or a stall off the control file."""
    with _lock:
        try:
            words = open(control).read().split()
        except OSError:
            words = []
        if not words or words[0] == "pass":
            return ("pass", 0)
        if words[0] == "503":
            left = int(words[1]) if len(words) > 1 else 1
            with open(control, "w") as f:
                f.write(f"503 {left - 1}\n" if left > 1 else "pass\n")
            return ("503", 0)
        if words[0] == "stall":
            with open(control, "w") as f:
                f.write("pass\n")
            return ("stall", float(words[1]) if len(words) > 1 else 10)
        return ("pass", 0)


def _read_head(sock):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None, b""
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _pipe(src, dst):
    try:
        while True:
            chunk = src.recv(65536)
            if not chunk:
                break
            dst.sendall(chunk)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _serve(client, upstream, control):
    try:
        head, rest = _read_head(client)
        if head is None:
            return
        mode, seconds = _decide(control)
        request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        print(f"{mode} {request_line}", flush=True)
        if mode == "503":
            body = b"<?xml version=\"1.0\"?><Error><Code>SlowDown</Code><Message>injected</Message></Error>"
            client.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/xml\r\n"
                           b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
            return
        if mode == "stall":
            time.sleep(seconds)
            return
        lines = [l for l in head.split(b"\r\n") if not l.lower().startswith(b"connection:")]
        lines.append(b"Connection: close")
        server = socket.create_connection(upstream)
        try:
            server.sendall(b"\r\n".join(lines) + b"\r\n\r\n" + rest)
            # The body goes up on its own thread; the answer ends the exchange (both
            # sockets are closed then, which ends that thread too).
            threading.Thread(target=_pipe, args=(client, server), daemon=True).start()
            _pipe(server, client)
        finally:
            server.close()
    except OSError:
        pass
    finally:
        client.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream", required=True, help="HOST:PORT of the store")
    ap.add_argument("--control", required=True, help="the control file (created as 'pass')")
    ap.add_argument("--port-file", required=True, help="where the listening port is written")
    args = ap.parse_args()
    host, _, port = args.upstream.rpartition(":")
    upstream = (host, int(port))
    if not os.path.exists(args.control):
        with open(args.control, "w") as f:
            f.write("pass\n")
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(f"{listener.getsockname()[1]}\n")
    os.rename(args.port_file + ".tmp", args.port_file)
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_serve, args=(client, upstream, args.control), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
