#!/usr/bin/env python3
"""A hostile S3 endpoint for the archive tier's tests (standard library only).

    hostile_s3.py --port-file FILE [--mode MODE] [--mode-file FILE] [--bucket B] [--prefix P]

Listens on 127.0.0.1 on an ephemeral port (written to --port-file once it listens) and
serves until killed. Signatures are not checked. The mode is --mode, or the first word of
--mode-file when that file exists (read at every request, so a test changes it mid-run):

  valid            a small, correct archive: a listing under P holding linecap-store.json,
                   its body, PUT/DELETE/POST accepted, no unfinished uploads
  endless-listing  a listing whose body never ends (comments after the document element)
  endless-entries  a listing of <Contents> entries without end
  endless-key      a listing whose first <Key> never ends
  huge-listing     a valid 64 MiB listing (1000 entries, each with 64 KiB of ignored text)
  truncated        a listing cut off inside an element, the connection closed
  deep             a listing nesting elements a million deep
  laughs           a listing whose <Key> is a billion-laughs entity
  bad-size         a listing whose <Size> is "12abc"
  overflow-size    a listing whose <Size> is larger than 2^64
  slow             a listing trickled at 1 byte every 2 s
  endless-put      every PUT answered 200 with a body that never ends (the rest: valid)
  endless-error    every request answered 500 with an <Error> whose <Message> never ends
"""
import argparse
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHUNK = 64 * 1024
HEAD = b'<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'


def listing(entries):
    body = HEAD + b"<IsTruncated>false</IsTruncated>"
    for key, size in entries:
        body += b"<Contents><Key>%s</Key><Size>%s</Size><ETag>&quot;0&quot;</ETag>" % (key, size)
        body += b"<LastModified>2026-12-03T11:40:13.000Z</LastModified></Contents>"
    return body + b"</ListBucketResult>"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: the test prints what it needs
        pass

    def mode(self):
        path = self.server.mode_file
        if path and os.path.exists(path):
            with open(path) as f:
                words = f.read().split()
                if words:
                    return words[0]
        return self.server.mode

    def drain(self):
        n = int(self.headers.get("Content-Length") or 0)
        while n > 0:
            got = self.rfile.read(min(n, CHUNK))
            if not got:
                break
            n -= len(got)

    def answer(self, status, body, content_type="application/xml", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def endless(self, status, first, repeat):
        """A body without a length, written until the client hangs up."""
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        block = repeat * max(1, CHUNK // len(repeat))
        try:
            self.wfile.write(first)
            while True:
                self.wfile.write(block)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def valid(self):
        s = self.server
        path = self.path.split("?", 1)[0]
        query = self.path.split("?", 1)[1] if "?" in self.path else ""
        key = path.lstrip("/").split("/", 1)[1] if "/" in path.lstrip("/") else ""
        if self.command in ("PUT",):
            return self.answer(200, b"", extra=[("ETag", '"0"')])
        if self.command == "DELETE":
            self.send_response(204)
            self.end_headers()
            return None
        if self.command == "POST" and "uploads" in query:
            return self.answer(200, b"<InitiateMultipartUploadResult><UploadId>u1</UploadId>"
                                    b"</InitiateMultipartUploadResult>")
        if self.command == "POST":
            return self.answer(200, b"<CompleteMultipartUploadResult/>")
        if "uploads" in query:
            return self.answer(200, b"<ListMultipartUploadsResult><IsTruncated>false</IsTruncated>"
                                    b"</ListMultipartUploadsResult>")
        if "list-type=2" in query:
            return self.answer(200, listing([(s.description_key.encode(), str(len(s.description)).encode())]))
        if key == s.description_key:
            return self.answer(200, s.description, "application/json", [("ETag", '"0"')])
        return self.answer(404, b"<Error><Code>NoSuchKey</Code><Message>no such key</Message></Error>")

    def handle_any(self):
        self.drain()
        mode = self.mode()
        is_listing = self.command == "GET" and "list-type=2" in self.path
        if mode == "endless-error":
            return self.endless(500, b"<Error><Code>InternalError</Code><Message>", b"x")
        if mode == "endless-put" and self.command == "PUT":
            return self.endless(200, b"", b"endless ")
        if not is_listing or mode in ("valid", "endless-put"):
            return self.valid()
        if mode == "endless-listing":
            return self.endless(200, HEAD, b"<!-- padding -->")
        if mode == "endless-entries":
            return self.endless(200, HEAD, b"<Contents><Key>k</Key><Size>1</Size></Contents>")
        if mode == "endless-key":
            return self.endless(200, HEAD + b"<Contents><Key>", b"k")
        if mode == "huge-listing":
            filler = b"<Owner><DisplayName>" + b"o" * CHUNK + b"</DisplayName></Owner>"
            self.send_response(200)
            self.send_header("Content-Type", "application/xml")
            parts = [HEAD, b"<IsTruncated>false</IsTruncated>"]
            entry = b"<Contents><Key>k%d</Key><Size>1</Size>" + filler + b"</Contents>"
            total = sum(len(p) for p in parts) + sum(len(entry % i) for i in range(1000)) + len(b"</ListBucketResult>")
            self.send_header("Content-Length", str(total))
            self.end_headers()
            try:
                for p in parts:
                    self.wfile.write(p)
                for i in range(1000):
                    self.wfile.write(entry % i)
                self.wfile.write(b"</ListBucketResult>")
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
            return None
        if mode == "truncated":
            body = HEAD + b"<IsTruncated>false</IsTruncated><Contents><Key>site/a.pc"
            self.close_connection = True
            return self.answer(200, body, extra=[("Connection", "close")])
        if mode == "deep":
            return self.endless(200, HEAD, b"<a>")
        if mode == "laughs":
            entities = b'<!ENTITY l0 "lol">' + b"".join(
                b'<!ENTITY l%d "%s">' % (i, b"&l%d;" % (i - 1) * 10) for i in range(1, 10))
            body = (b'<?xml version="1.0"?><!DOCTYPE ListBucketResult [' + entities + b"]>"
                    b"<ListBucketResult><Contents><Key>k</Key><Size>1</Size><Owner>&l9;</Owner></Contents>"
                    b"</ListBucketResult>")
            return self.answer(200, body)
        if mode == "bad-size":
            return self.answer(200, listing([(b"site/a.pcap", b"12abc")]))
        if mode == "overflow-size":
            return self.answer(200, listing([(b"site/a.pcap", b"99999999999999999999999")]))
        if mode == "slow":
            self.send_response(200)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            try:
                for byte in listing([]):
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(2)  # the point of the mode: slower than the client's low-speed bound
            except (BrokenPipeError, ConnectionResetError):
                pass
            return None
        return self.answer(500, b"<Error><Code>UnknownMode</Code></Error>")

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_any


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--mode", default="valid")
    ap.add_argument("--mode-file")
    ap.add_argument("--prefix", default="hostile")
    args = ap.parse_args()
    server = Server(("127.0.0.1", 0), Handler)
    server.mode, server.mode_file = args.mode, args.mode_file
    server.description_key = args.prefix + "/linecap-store.json"
    server.description = (b'{"format":1,"appliance":"hostile","file_template":'
                          b'"%Y%m%dT%H%M%S.{nsec}Z-{port}-q{queue}","rotate_interval_s":60}\n')
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % server.server_address[1])
    os.replace(tmp, args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
