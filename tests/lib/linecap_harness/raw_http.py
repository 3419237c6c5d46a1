"""Raw HTTP over TLS for the API tests and bench/api/hostile.py: requests written by hand
(the shapes no HTTP library would send), answers read to the connection's close."""
import socket
import ssl
import struct


def tls_connect(port, cafile, host="127.0.0.1"):
    ctx = ssl.create_default_context(cafile=cafile)
    return ctx.wrap_socket(socket.create_connection((host, port)), server_hostname=host)


def read_to_close(s):
    """Everything the server sends until it closes (or the socket's timeout)."""
    got = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            got += d
    except OSError:
        pass
    return got


def disconnect_mid_stream(port, cafile, token, path, after_bytes, rcvbuf=None):
    """GET PATH, read AFTER_BYTES of the answer, then reset the connection (SO_LINGER 0: not
    a polite close). Returns the answer's status line."""
    s = tls_connect(port, cafile)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    got = b""
    while len(got) < after_bytes:
        got += s.recv(65536)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    return got.split(b"\r\n", 1)[0].decode(errors="replace")


def main(argv=None):
    """python3 -m linecap_harness.raw_http disconnect PORT CAFILE TOKEN PATH AFTER_BYTES [RCVBUF]

    disconnect_mid_stream; prints the status line."""
    import sys
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (6, 7) or args[0] != "disconnect":
        print(main.__doc__, file=sys.stderr)
        return 2
    rcvbuf = int(args[6]) if len(args) == 7 else None
    print(disconnect_mid_stream(int(args[1]), args[2], args[3], args[4], int(args[5]), rcvbuf))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
