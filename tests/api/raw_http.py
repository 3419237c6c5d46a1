"""Raw HTTP over TLS for the API tests and bench/api/hostile.py: requests written by hand
(the shapes no HTTP library would send), answers read to the connection's close."""
import socket
import ssl


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
