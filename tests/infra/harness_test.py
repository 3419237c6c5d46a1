#!/usr/bin/env python3
"""Self-test of tests/lib/linecap_harness (no daemon, no root)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.dont_write_bytecode = True

from linecap_harness import prometheus  # noqa: E402

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


if __name__ == "__main__":
    unittest.main()
