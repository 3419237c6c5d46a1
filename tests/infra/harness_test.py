#!/usr/bin/env python3
"""Self-test of tests/lib/linecap_harness (no daemon, no root)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.dont_write_bytecode = True

from linecap_harness import config, daemon, pcap, prometheus, stenographer  # noqa: E402

EXPOSITION = r'''# HELP linecap_rx_packets_total Packets received.
# TYPE linecap_rx_packets_total counter
linecap_rx_packets_total{port="p0",queue="0"} 5
linecap_rx_packets_total{port="p0",queue="1"} 7
linecap_rx_packets_total{port="p1",queue="0"} 100
linecap_dropped_packets_total{port="p0",reason="a \"quoted\" one"} 2.5
linecap_dropped_packets_total{port="p0",reason="writer_full"} 0
linecap_worker_cycles_per_packet{worker="1"} NaN
linecap_up 1 1700000000000
# TYPE linecap_declared_only gauge
'''


class PrometheusTest(unittest.TestCase):
    def setUp(self):
        self.scrape = prometheus.Scrape(EXPOSITION)

    def test_total_by_labels(self):
        self.assertEqual(self.scrape.total("linecap_rx_packets_total"), 112)
        self.assertEqual(self.scrape.total("linecap_rx_packets_total", port="p0"), 12)
        self.assertEqual(self.scrape.total("linecap_rx_packets_total", port="p0", queue="1"), 7)
        self.assertEqual(self.scrape.total("linecap_absent_total"), 0)
        self.assertIsInstance(self.scrape.total("linecap_rx_packets_total"), int)

    def test_fractions_escapes_nan_and_timestamps(self):
        self.assertEqual(self.scrape.total("linecap_dropped_packets_total"), 2.5)
        self.assertEqual(self.scrape.label_values("linecap_dropped_packets_total", "reason"),
                         ['a \\"quoted\\" one', "writer_full"])
        (nan,) = self.scrape.values("linecap_worker_cycles_per_packet")
        self.assertNotEqual(nan, nan)
        self.assertEqual(self.scrape.total("linecap_up"), 1)

    def test_names(self):
        self.assertEqual(prometheus.names(EXPOSITION),
                         {"linecap_rx_packets_total", "linecap_dropped_packets_total",
                          "linecap_worker_cycles_per_packet", "linecap_up", "linecap_declared_only"})

    def test_unparsable_line_raises(self):
        with self.assertRaises(ValueError):
            prometheus.parse("linecap_rx_packets_total{port=\"p0\"}\n")

    def test_sum_command_reads_a_file(self):
        import contextlib
        import io
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
            f.write(EXPOSITION)
            f.flush()
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = prometheus.main(["sum", f.name, "linecap_rx_packets_total", "port=p1"])
        self.assertEqual((rc, out.getvalue()), (0, "100\n"))


class PcapTest(unittest.TestCase):
    PACKETS = [pcap.Packet(1_700_000_000_123_456_789, 60, b"\x01" * 60),
               pcap.Packet(1_700_000_001_000_000_001, 1514, b"\x02" * 96)]

    def round_trip(self, name, writer, **fmt):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, name)
            writer(path, self.PACKETS, **fmt)
            cap = pcap.Capture(path)
            got = [(r.ts_ns, r.caplen, r.length, bytes(r.data), r.linktype) for r in cap]
            return cap, got

    def test_pcap_and_pcapng_round_trip(self):
        want = [(p.ts_ns, len(p.data), p.length, p.data, 1) for p in self.PACKETS]
        for name, writer, fmt, kind in [
                ("a.pcap", pcap.write_pcap, {}, "pcap-ns"),
                ("b.pcap", pcap.write_pcap, {"big_endian": True}, "pcap-ns-be"),
                ("c.pcapng", pcap.write_pcapng, {}, "pcapng")]:
            cap, got = self.round_trip(name, writer, **fmt)
            self.assertEqual((cap.format, cap.snaplen, cap.problems, got), (kind, 262144, [], want), name)

    def test_microseconds(self):
        cap, got = self.round_trip("us.pcap", pcap.write_pcap, nano=False)
        self.assertEqual(cap.format, "pcap-us")
        self.assertEqual([g[0] for g in got], [1_700_000_000_123_456_000, 1_700_000_001_000_000_000])

    def test_truncated_tail(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "growing.pcap")
            with open(path, "wb") as f:
                f.write(pcap.pcap_bytes(self.PACKETS)[:-10])
            with self.assertRaises(pcap.CaptureError):
                pcap.count(path)
            self.assertEqual(pcap.count(path, growing=True), 1)
            self.assertEqual([r.data for r in pcap.records(path, growing=True)], [self.PACKETS[0].data])


class ConfigTest(unittest.TestCase):
    def test_daemon_config_and_settings(self):
        cfg = config.daemon("net_null0", "/o", "127.0.0.1:9", port={"rx_queues": 2},
                            output={"rotate": {"size_mb": 64}}, capture={"timestamps": "port"})
        self.assertEqual(cfg["ports"], [{"name": "p0", "device": "net_null0", "rx_queues": 2}])
        self.assertEqual(cfg["output"], {"directory": "/o", "rotate": {"size_mb": 64}})
        self.assertEqual(config.settings(["port.filter=tcp port 80", "output.rotate.size_mb=1",
                                          "output.index=false", 'output.scrub={"enabled": false}']),
                         {"port": {"filter": "tcp port 80"},
                          "output": {"rotate": {"size_mb": 1}, "index": False, "scrub": {"enabled": False}}})
        with self.assertRaises(ValueError):
            config.settings(["output"])

    def test_dump_is_the_yaml_of_the_dict(self):
        cfg = config.daemon('net_pcap0,rx_pcap=/a b/"q".pcap', "/o", "127.0.0.1:9", name="bench",
                            port={"filter": 'host 1.2.3.4 and "x"'}, output={"manifest": False, "rotate": {}},
                            capture={"mbufs": 9999, "idle_sleep_us": 2.5})
        text = config.dump(cfg, "harness_test")
        self.assertTrue(text.startswith("# written by harness_test\n"))
        try:
            import yaml
        except ImportError:
            self.skipTest("no PyYAML to read it back")
        self.assertEqual(yaml.safe_load(text), cfg)


class DaemonTest(unittest.TestCase):
    def test_ready_line_stop_and_status(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            script = os.path.join(d, "fake.py")
            with open(script, "w") as f:
                f.write("import signal, sys, time\n"
                        "signal.signal(signal.SIGTERM, lambda *a: sys.exit(3))\n"
                        f"print({daemon.READY_LINE!r}, flush=True)\n"
                        "signal.pause()\n")
            proc = daemon.Linecapd(script, os.path.join(d, "cfg.yaml"), os.path.join(d, "log"),
                                   prefix=[sys.executable])
            proc.wait_ready(timeout=30)
            self.assertTrue(proc.alive())
            self.assertEqual(proc.stop(timeout=10), 3)
            self.assertIn(daemon.READY_LINE, proc.text())

    def test_exit_before_ready_fails_at_once(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            proc = daemon.Process([sys.executable, "-c", "print('bad config'); raise SystemExit(78)"],
                                  os.path.join(d, "log"))
            with self.assertRaisesRegex(RuntimeError, "bad config"):
                daemon.wait_until(lambda: False, 30, "start", proc)
            self.assertEqual(proc.stop(), 78)


class StenographerTest(unittest.TestCase):
    def test_file_packets_counts_written_blocks(self):
        import struct
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "1700000000000000")
            with open(path, "wb") as fh:
                for packets in (3, 5):  # two retired TPACKET_V3 blocks ...
                    fh.write(struct.pack("<4I", 2, 0, 1, packets).ljust(stenographer.BLOCK, b"\0"))
                fh.write(bytes(stenographer.BLOCK))  # ... and one never filled
            self.assertEqual(stenographer.file_packets(path), 8)

    def test_drops_is_the_last_cumulative_count(self):
        self.assertEqual(stenographer.drops("no stats yet"), 0)
        text = ("Thread 0 stats: MB=1 secs=1 MBps=1 packets=10 blocks=1 polls=2 drops=0 drop%=0\n"
                "Thread 0 stats: MB=2 secs=2 MBps=1 packets=20 blocks=2 polls=4 drops=7 drop%=25.9\n")
        self.assertEqual(stenographer.drops(text), 7)

    def test_flags_keep_aiops_within_the_ring(self):
        self.assertIn("--aiops=32", stenographer.stenotype_flags(32))
        self.assertIn("--aiops=128", stenographer.stenotype_flags(256))


if __name__ == "__main__":
    unittest.main()
