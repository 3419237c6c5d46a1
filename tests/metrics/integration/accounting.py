#!/usr/bin/env python3
"""Drop-accounting checks against a live linecapd (tests/metrics/integration).

The contract (src/metrics/exposition.hpp): every packet that reached a port is exactly one
of written, filtered or dropped(reason), where "filtered" here counts every packet a policy
kept out on purpose: the capture filter, capture.flow_cap and capture.dedup, and
    reached = linecap_port_received_packets_total = ipackets + imissed + ierrors + rx_nombuf.

Subcommands (exit 0 = ok, 1 = check failed or timed out, 2 = usage/unreadable input):

  wait-drained URL --out FILE [--timeout S] [--stable N]
      Poll the metrics endpoint until the capture has drained: N+1 snapshots from N+1
      distinct collections (the worker heartbeat differs between them) carry identical
      accounting counters and the writer backlog is 0. Writes the last scrape to FILE,
      and linecapd's /status document then to FILE.status.json.
      This is a wait for an observed state, not a sleep: it returns as soon as it holds.

  wait-for URL received|accounted --at-least N [--timeout S] [--pid PID]
      Poll until linecap_port_received_packets_total (received) or written + filtered +
      dropped (accounted) is >= N: for pacing a replay. Exit 1 on timeout or daemon exit.

  value FILE NAME [LABEL=VALUE]...
      The sum of NAME's samples (with those labels) in a scrape file.

  in-flight FILE
      During a capture: received - written - filtered - dropped must never be negative
      (nothing is counted twice). Prints the value.

  check --scrape FILE --log LOG --out-dir DIR [--out-dir DIR]... --sent N --kernel-before K --kernel-after K
        [--port NAME] [--expect REASON=+|0|*]... [--xdp-drops-visible] [--sent-bytes N]
        [--written N] [--left-for-recovery]
      The invariant, exactly, after the drain:
        reached == written + filtered + sum(dropped)               (daemon, /metrics)
        reached == rx + nic_missed + nic_error + no_mbuf + xsk_*     (definition)
        the SIGTERM summary line == the last scrape, field by field
        /status (FILE.status.json, when there) == the scrape, per port and drop reason
        written - lost_after_write == packets in the finished files; written_bytes (and
          file_bytes) - their lost_after_write == the files' original lengths (and sizes)
          (lost_after_write: linecap_volume_lost_after_write_*_total, what a failed volume's
          file system had not committed of what was counted written; 0 otherwise)
        sent (tcpreplay) == cap_rx_packets + peer_tx_dropped         (kernel, veth)
        sent == reached + peer_tx_dropped + (cap_rx_dropped - nic_missed - xsk_*)
      with the kernel counters of the veth pair read before and after the replay (files
      written by `kernel-counters`). --xdp-drops-visible also requires cap_rx_dropped ==
      nic_missed + xsk_fill_empty + xsk_ring_full: every packet the XDP redirect into the
      AF_XDP socket failed to deliver is counted, with its reason (see README.md here).
      --expect REASON=+ wants a non-zero count, =0 zero, =* anything (default 0 for every
      reason not named).

  promql PROMETHEUS_URL EXPR [--expect V | --expect-empty] [--quiet]
      Instant query over /api/v1/query; prints the samples. With --expect: ok when there
      is exactly one sample and it equals V; --expect-empty: ok when there is none.

  rules-healthy PROMETHEUS_URL [--min-rules N]
      Every loaded rule has been evaluated without error (/api/v1/rules health "ok").
"""
import argparse
import json
import os
import re
import sys
import time
import urllib.parse

from linecap_harness import pcap, prometheus

REASONS = ("nic_missed", "nic_error", "no_mbuf", "xsk_fill_empty", "xsk_ring_full", "writer_full", "write_error",
           "disk_full")
# The drops a net_af_xdp port counts for the whole port besides ipackets: what reached
# means (src/metrics/port_stats.hpp), and what the kernel's XDP redirect could not deliver.
PORT_REASONS = ("nic_missed", "nic_error", "no_mbuf", "xsk_fill_empty", "xsk_ring_full")
XDP_REASONS = ("nic_missed", "xsk_fill_empty", "xsk_ring_full")


class Scrape(prometheus.Scrape):
    """A scrape read as the drop-accounting contract."""

    def accounting(self, port=None):
        sel = {"port": port} if port else {}
        a = {
            "received": self.total("linecap_port_received_packets_total", **sel),
            "rx": self.total("linecap_rx_packets_total", **sel),
            "rx_bytes": self.total("linecap_rx_bytes_total", **sel),
            "written": self.total("linecap_written_packets_total", **sel),
            "written_bytes": self.total("linecap_written_bytes_total", **sel),
            "filtered": self.total("linecap_filtered_packets_total", **sel)
            + self.total("linecap_flow_cap_dropped_packets_total", **sel)
            + self.total("linecap_dedup_packets_total", **sel),
            "file_bytes": self.total("linecap_output_file_bytes_total", **sel),
            "files_finalised": self.total("linecap_files_finalised_total", **sel),
            # Per volume, not per port: exact for the one-port runs that fail a volume.
            "lost_after_write": self.total("linecap_volume_lost_after_write_packets_total"),
            "lost_after_write_bytes": self.total("linecap_volume_lost_after_write_bytes_total"),
            "lost_after_write_file_bytes": self.total("linecap_volume_lost_after_write_file_bytes_total"),
        }
        for reason in REASONS:
            a[reason] = self.total("linecap_dropped_packets_total", reason=reason, **sel)
        a["dropped"] = self.total("linecap_dropped_packets_total", **sel)
        return a

    def heartbeat(self):
        return self.total("linecap_worker_heartbeat_total")

    def backlog(self):
        return self.total("linecap_writer_backlog_blocks")


def cmd_wait_drained(args):
    deadline = time.monotonic() + args.timeout
    history = []  # one entry per distinct collection: (heartbeat, accounting, text)
    interval = 0.05
    last_error = None
    while True:
        try:
            scrape = Scrape(prometheus.fetch(args.url))
            last_error = None
            hb = scrape.heartbeat()
            if not history or hb != history[-1][0]:
                history.append((hb, scrape.accounting(), scrape.text))
                history = history[-(args.stable + 1):]
            if (len(history) == args.stable + 1
                    and all(h[1] == history[-1][1] for h in history)
                    and scrape.backlog() == 0):
                with open(args.out, "w") as f:
                    f.write(history[-1][2])
                # The same counters as linecapd's /status document, for `check`.
                with open(args.out + ".status.json", "w") as f:
                    f.write(prometheus.fetch(args.url.rsplit("/", 1)[0] + "/status"))
                print(f"drained: counters unchanged over {args.stable + 1} collections, backlog 0: "
                      + json.dumps(history[-1][1], sort_keys=True))
                return 0
        except Exception as e:  # endpoint briefly unavailable: retry until the deadline
            last_error = e
        if time.monotonic() >= deadline:
            print(f"wait-drained: not drained after {args.timeout}s; last error: {last_error}; "
                  "last collections:", file=sys.stderr)
            for hb, acc, _ in history:
                print(f"  heartbeat {hb}: {json.dumps(acc, sort_keys=True)}", file=sys.stderr)
            return 1
        time.sleep(interval)
        interval = min(interval * 2, 0.25)


def cmd_wait_for(args):
    """Poll until received (or written + filtered + dropped) >= N; one process, backing off
    from 50 ms to 250 ms; gives up when the daemon (--pid) exits or after --timeout."""
    deadline = time.monotonic() + args.timeout
    interval, value, error = 0.05, None, None
    while True:
        try:
            a = Scrape(prometheus.fetch(args.url, timeout=10)).accounting()
            value = a["received"] if args.what == "received" else a["written"] + a["filtered"] + a["dropped"]
            if value >= args.at_least:
                return 0
        except Exception as e:
            error = e
        if args.pid and not os.path.exists(f"/proc/{args.pid}"):
            print(f"wait-for: the daemon (pid {args.pid}) exited", file=sys.stderr)
            return 1
        if time.monotonic() >= deadline:
            print(f"wait-for: {args.what} is {value}, not >= {args.at_least} after {args.timeout}s "
                  f"(last error: {error})", file=sys.stderr)
            return 1
        time.sleep(interval)
        interval = min(interval * 2, 0.25)


def cmd_value(args):
    with open(args.scrape) as f:
        print(Scrape(f.read()).total(args.name, **dict(a.split("=", 1) for a in args.labels)))
    return 0


def cmd_in_flight(args):
    with open(args.scrape) as f:
        a = Scrape(f.read()).accounting()
    in_flight = a["received"] - a["written"] - a["filtered"] - a["dropped"]
    print(in_flight)
    if in_flight < 0:
        print(f"in-flight {in_flight} < 0: more packets accounted for than reached the port: "
              f"{json.dumps(a, sort_keys=True)}", file=sys.stderr)
        return 1
    return 0


SUMMARY = re.compile(
    r"port (?P<port>\S+): (?P<received>\d+) packets reached the port, (?P<written>\d+) written, "
    r"(?P<filtered>\d+) filtered, dropped: nic_missed=(?P<nic_missed>\d+) nic_error=(?P<nic_error>\d+) "
    r"no_mbuf=(?P<no_mbuf>\d+) xsk_fill_empty=(?P<xsk_fill_empty>\d+) xsk_ring_full=(?P<xsk_ring_full>\d+) "
    r"writer_full=(?P<writer_full>\d+) write_error=(?P<write_error>\d+) disk_full=(?P<disk_full>\d+)")


def read_summary(log_path, port):
    found = None
    with open(log_path, errors="replace") as f:
        for line in f:
            m = SUMMARY.search(line)
            if m and m.group("port") == port:
                found = {k: int(v) for k, v in m.groupdict().items() if k != "port"}
    return found


def count_finalised(log_path):
    with open(log_path, errors="replace") as f:
        return sum(1 for line in f if re.search(r" info finalised \S+\.pcap", line))


def read_kernel(path):
    with open(path) as f:
        return {k: int(v) for k, v in (item.split("=", 1) for item in f.read().split())}


def files_totals(out_dirs, recovery=False):
    """The finished files' totals; with `recovery`, also those of files left under their
    in-progress name for recovery (.NAME.part: their complete records count, and they are
    not listed as hidden)."""
    finished = pcap.expand(out_dirs)
    hidden = sorted(os.path.join(d, n) for d in out_dirs for n in os.listdir(d) if n.startswith("."))
    parts = [h for h in hidden if recovery and h.endswith((".pcap.part", ".pcapng.part"))]
    hidden = [h for h in hidden if h not in parts]
    packets = orig_bytes = file_bytes = 0
    for path in finished + parts:
        file_bytes += os.path.getsize(path)
        for rec in pcap.Capture(path, growing=path in parts):
            packets += 1
            orig_bytes += rec.length
    return {"files": len(finished), "packets": packets, "orig_bytes": orig_bytes,
            "file_bytes": file_bytes, "hidden": hidden, "parts": parts}


def status_port(scrape_path, port):
    """The port's entry of the /status document saved beside a scrape; None without one."""
    try:
        with open(scrape_path + ".status.json") as f:
            ports = json.load(f)["ports"]
    except FileNotFoundError:
        return None
    return next((p for p in ports if p["port"] == port), {})


def cmd_check(args):
    with open(args.scrape) as f:
        scrape = Scrape(f.read())
    a = scrape.accounting(args.port)
    status = status_port(args.scrape, args.port) if args.port else None
    summary = read_summary(args.log, args.port)
    kb, ka = read_kernel(args.kernel_before), read_kernel(args.kernel_after)
    k = {name: ka[name] - kb[name] for name in ka}
    files = files_totals(args.out_dir, args.left_for_recovery)
    sent = args.sent

    problems = []

    def require(ok, what):
        print(f"  [{'ok' if ok else 'FAIL'}] {what}")
        if not ok:
            problems.append(what)

    drops = sum(a[r] for r in REASONS)
    print(f"accounting for port {args.port}:")
    print(f"  tcpreplay sent             {sent}")
    print(f"  kernel (veth pair, deltas) peer tx_packets={k['peer_tx_packets']} "
          f"peer tx_dropped={k['peer_tx_dropped']} cap rx_packets={k['cap_rx_packets']} "
          f"cap rx_dropped={k['cap_rx_dropped']} cap tx_packets={k.get('cap_tx_packets', '?')}")
    print(f"  reached the port           {a['received']}  (rx {a['rx']})")
    print(f"  written                    {a['written']}  ({a['written_bytes']} wire bytes)")
    if a["lost_after_write"] or a["lost_after_write_file_bytes"]:
        print(f"  lost after write           {a['lost_after_write']}  ({a['lost_after_write_bytes']} wire bytes, "
              f"{a['lost_after_write_file_bytes']} file bytes: not committed by a failed volume)")
    print(f"  filtered                   {a['filtered']}")
    print("  dropped                    " + " ".join(f"{r}={a[r]}" for r in REASONS)
          + f"  (sum {drops})")
    print(f"  files                      {files['files']} finished, {files['packets']} packets, "
          f"{files['orig_bytes']} wire bytes, {files['file_bytes']} file bytes")
    if files["parts"]:
        print(f"  left for recovery          {', '.join(files['parts'])} (their complete records counted)")
    print(f"  summary line               {summary}")
    print("checks:")

    require(a["dropped"] == drops, f"dropped series carry only the known reasons ({a['dropped']} == {drops})")
    require(a["received"] == a["written"] + a["filtered"] + drops,
            f"reached == written + filtered + dropped: {a['received']} == "
            f"{a['written']} + {a['filtered']} + {drops} (= {a['written'] + a['filtered'] + drops})")
    port_drops = sum(a[r] for r in PORT_REASONS)
    require(a["received"] == a["rx"] + port_drops,
            f"reached == rx + {' + '.join(PORT_REASONS)}: {a['received']} == {a['rx'] + port_drops}")
    require(summary is not None, "the SIGTERM summary line is in the log")
    if summary is not None:
        for key, value in summary.items():
            metric = a["received"] if key == "received" else a[key]
            require(value == metric, f"summary {key}={value} == /metrics {metric}")
    if status is not None:
        want = {"received_packets": a["rx"], "received_bytes": a["rx_bytes"], "written_packets": a["written"],
                "filtered_packets": scrape.total("linecap_filtered_packets_total", port=args.port),
                "dropped_packets": drops}
        got = {key: status.get(key) for key in want}
        require(got == want, f"/status == /metrics for the port: {got} == {want}")
        by_reason = {r: a[r] for r in REASONS if a[r]}
        got_reasons = {r: n for r, n in status.get("dropped", {}).items() if n}
        require(got_reasons == by_reason, f"/status drops by reason == /metrics: {got_reasons} == {by_reason}")
    kept = a["written"] - a["lost_after_write"]
    require(files["packets"] == kept,
            f"packets in the finished files == written - lost after write: {files['packets']} == "
            f"{a['written']} - {a['lost_after_write']}")
    kept_bytes = a["written_bytes"] - a["lost_after_write_bytes"]
    require(files["orig_bytes"] == kept_bytes,
            f"wire bytes in the files == linecap_written_bytes_total - lost after write: {files['orig_bytes']} == "
            f"{a['written_bytes']} - {a['lost_after_write_bytes']}")
    kept_file_bytes = a["file_bytes"] - a["lost_after_write_file_bytes"]
    require(files["file_bytes"] == kept_file_bytes,
            f"size of the finished files == linecap_output_file_bytes_total - lost after write: "
            f"{files['file_bytes']} == {a['file_bytes']} - {a['lost_after_write_file_bytes']}")
    require(not files["hidden"], f"no in-progress file left after SIGTERM ({files['hidden']})")
    finalised_lines = count_finalised(args.log)
    require(files["files"] == finalised_lines,
            f"finished files == 'finalised' log lines: {files['files']} == {finalised_lines}")
    require(sent == k["cap_rx_packets"] + k["peer_tx_dropped"],
            f"kernel: sent == cap rx_packets + peer tx_dropped: {sent} == "
            f"{k['cap_rx_packets']} + {k['peer_tx_dropped']}")
    xdp_drops = sum(a[r] for r in XDP_REASONS)
    invisible = k["cap_rx_dropped"] - xdp_drops
    require(sent == a["received"] + k["peer_tx_dropped"] + invisible,
            f"sent == reached + peer tx_dropped + (cap rx_dropped - {' - '.join(XDP_REASONS)}): {sent} == "
            f"{a['received']} + {k['peer_tx_dropped']} + {invisible}")
    if args.sent_bytes is not None:
        require(a["rx_bytes"] == args.sent_bytes,
                f"linecap_rx_bytes_total == wire bytes sent: {a['rx_bytes']} == {args.sent_bytes}")
    if args.written is not None:
        require(a["written"] == args.written and a["filtered"] == sent - args.written,
                f"written == packets the filter keeps: {a['written']} == {args.written}, "
                f"filtered == the rest: {a['filtered']} == {sent - args.written}")
    if args.xdp_drops_visible:
        require(invisible == 0,
                f"every XDP redirect failure is counted with a reason: cap rx_dropped "
                f"{k['cap_rx_dropped']} == {' + '.join(XDP_REASONS)} {xdp_drops}")

    expect = {r: "0" for r in REASONS}
    for item in args.expect:
        reason, _, want = item.partition("=")
        if reason not in expect or want not in ("+", "0", "*"):
            print(f"bad --expect {item!r}", file=sys.stderr)
            return 2
        expect[reason] = want
    for reason in REASONS:
        want, got = expect[reason], a[reason]
        if want == "+":
            require(got > 0, f"{reason} > 0 (this scenario causes it): {got}")
        elif want == "0":
            require(got == 0, f"{reason} == 0 (nothing in this scenario causes it): {got}")
        else:
            print(f"  [--] {reason} = {got} (not asserted)")

    if problems:
        print(f"{len(problems)} check(s) failed")
        return 1
    print("invariant holds exactly")
    return 0


def prom_api(base, path, **params):
    url = base.rstrip("/") + path
    if params:
        url += "?" + urllib.parse.urlencode(params)
    body = json.loads(prometheus.fetch(url, timeout=5))
    if body.get("status") != "success":
        raise RuntimeError(f"{url}: {body}")
    return body["data"]


def cmd_promql(args):
    """Instant query; with --expect V: exactly one sample whose value equals V."""
    try:
        data = prom_api(args.prometheus, "/api/v1/query", query=args.expr)
    except Exception as e:
        print(f"promql {args.expr!r}: {e}", file=sys.stderr)
        return 1
    if data["resultType"] == "scalar":
        results = [{"metric": {}, "value": data["result"]}]
    else:
        results = data["result"]
    values = [float(r["value"][1]) for r in results]
    if not args.quiet:
        for r in results:
            print(f"{args.expr} {r['metric']} = {r['value'][1]}")
        if not results:
            print(f"{args.expr} = (no samples)")
    if args.expect_empty:
        return 0 if not results else 1
    if args.expect is not None:
        return 0 if len(values) == 1 and values[0] == args.expect else 1
    return 0 if results else 1


def cmd_rules_healthy(args):
    """Every rule in every group has been evaluated without error (health "ok")."""
    try:
        groups = prom_api(args.prometheus, "/api/v1/rules")["groups"]
    except Exception as e:
        print(f"rules: {e}", file=sys.stderr)
        return 1
    rules = [(g["name"], r) for g in groups for r in g["rules"]]
    bad = [f"{g}/{r.get('name')}: health {r.get('health')} {r.get('lastError', '')}".strip()
           for g, r in rules if r.get("health") != "ok"]
    if not args.quiet:
        print(f"{len(rules)} rules in {len(groups)} groups, {len(rules) - len(bad)} healthy")
        for line in bad:
            print("  " + line)
    return 0 if rules and not bad and len(rules) >= args.min_rules else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("wait-drained")
    p.add_argument("url")
    p.add_argument("--out", required=True)
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--stable", type=int, default=2)
    p.set_defaults(func=cmd_wait_drained)

    p = sub.add_parser("wait-for")
    p.add_argument("url")
    p.add_argument("what", choices=("received", "accounted"))
    p.add_argument("--at-least", type=int, required=True)
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("--pid", type=int)
    p.set_defaults(func=cmd_wait_for)

    p = sub.add_parser("value")
    p.add_argument("scrape")
    p.add_argument("name")
    p.add_argument("labels", nargs="*", help="LABEL=VALUE")
    p.set_defaults(func=cmd_value)

    p = sub.add_parser("in-flight")
    p.add_argument("scrape")
    p.set_defaults(func=cmd_in_flight)

    p = sub.add_parser("check")
    p.add_argument("--scrape", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--out-dir", required=True, action="append", help="the capture directory (again for each volume)")
    p.add_argument("--sent", type=int, required=True)
    p.add_argument("--kernel-before", required=True)
    p.add_argument("--kernel-after", required=True)
    p.add_argument("--port", default="p0")
    p.add_argument("--expect", action="append", default=[])
    p.add_argument("--xdp-drops-visible", action="store_true")
    p.add_argument("--sent-bytes", type=int, help="wire bytes sent: all of them must be received")
    p.add_argument("--written", type=int, help="packets the files must hold (e.g. what a filter keeps)")
    p.add_argument("--left-for-recovery", action="store_true",
                   help="files left under their in-progress name for recovery (a failed volume) count with "
                        "their complete records")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("promql")
    p.add_argument("prometheus", help="base URL, e.g. http://127.0.0.1:9090")
    p.add_argument("expr")
    p.add_argument("--expect", type=float)
    p.add_argument("--expect-empty", action="store_true")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_promql)

    p = sub.add_parser("rules-healthy")
    p.add_argument("prometheus")
    p.add_argument("--min-rules", type=int, default=1)
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_rules_healthy)

    args = parser.parse_args()
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
