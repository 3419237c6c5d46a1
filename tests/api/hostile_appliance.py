#!/usr/bin/env python3
"""A malicious appliance for `linecap extract --remote` tests: answers /api/v1/packets
with 200, a valid pcap (or pcapng) file header and then

  endless  records as fast as the client takes them, forever
  trickle  two bytes every half second, forever

Usage: hostile_appliance.py MODE PORT_FILE. Listens on 127.0.0.1, an ephemeral port,
written to PORT_FILE once it listens; serves until killed.
"""
import socket
import struct
import sys
import threading
import time


def pcap_header():
    return struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1)


def pcapng_header():
    shb_body = struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)
    shb = struct.pack("<II", 0x0A0D0D0A, 12 + len(shb_body)) + shb_body + struct.pack("<I", 12 + len(shb_body))
    idb_body = struct.pack("<HHI", 1, 0, 262144)
    idb = struct.pack("<II", 1, 12 + len(idb_body)) + idb_body + struct.pack("<I", 12 + len(idb_body))
    return shb + idb


def records(pcapng, count, start):
    frame = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + b"\x45" + b"\x00" * 985
    out = []
    for i in range(count):
        ts = start + i * 1000
        if pcapng:
            body = struct.pack("<IIIII", 0, ts >> 32, ts & 0xFFFFFFFF, len(frame), len(frame)) + frame
            out.append(struct.pack("<II", 6, 12 + len(body)) + body + struct.pack("<I", 12 + len(body)))
        else:
            out.append(struct.pack("<IIII", ts // 10**9, ts % 10**9, len(frame), len(frame)) + frame)
    return b"".join(out)


def chunk(data):
    return b"%x\r\n" % len(data) + data + b"\r\n"


def serve(conn, mode):
    try:
        head = b""
        while b"\r\n\r\n" not in head:
            got = conn.recv(65536)
            if not got:
                return
            head += got
        pcapng = b"format=pcapng" in head.split(b"\r\n", 1)[0]
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        conn.sendall(chunk(pcapng_header() if pcapng else pcap_header()))
        if mode == "endless":
            t = 1796004600 * 10**9
            while True:
                conn.sendall(chunk(records(pcapng, 64, t)))
                t += 64 * 1000
        else:
            body = records(pcapng, 1000, 1796004600 * 10**9)
            for i in range(0, len(body), 2):
                conn.sendall(chunk(body[i:i + 2]))
                time.sleep(0.5)
    except OSError:
        pass
    finally:
        conn.close()


def main():
    mode, port_file = sys.argv[1], sys.argv[2]
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(s.getsockname()[1]))
    import os
    os.rename(port_file + ".tmp", port_file)
    while True:
        conn, _ = s.accept()
        threading.Thread(target=serve, args=(conn, mode), daemon=True).start()


if __name__ == "__main__":
    main()
