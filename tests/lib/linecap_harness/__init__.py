"""linecap's test and benchmark harness, one module per idea.

config      linecapd's YAML configuration
daemon      starting linecapd, waiting until it is ready, stopping it
pcap        reading and writing capture files (pcap, pcapng)
prometheus  reading linecapd's /metrics (the text exposition format)
raw_http    HTTP over TLS written by hand, for the retrieval API's tests

Importable from tests and bench: meson's test environment and tests/lib/common.sh put
tests/lib on PYTHONPATH, bench/bench.py on sys.path (tests/README.md).
"""
