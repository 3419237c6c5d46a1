#include "api/page.hpp"

namespace linecap::api {

// Kept deliberately plain: works offline, in any current browser, with no build step.
// The download goes through fetch() so a bearer token can be sent; the size is asked
// for first (/api/v1/size) so a person sees what they are about to download.
const char* page_html() {
    return R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>linecap</title>
<style>
 body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em auto; max-width: 60em; padding: 0 1em; color: #222; }
 h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 1.5em; }
 table { border-collapse: collapse; } td, th { padding: .2em .8em; border-bottom: 1px solid #ddd; text-align: left; }
 label { display: block; margin: .5em 0 .1em; } input { width: 100%; box-sizing: border-box; padding: .3em; font: inherit; }
 button { margin: .8em .5em 0 0; padding: .4em 1em; font: inherit; }
 .error { color: #b00; } .muted { color: #777; } #result { margin-top: 1em; }
</style>
</head>
<body>
<h1>linecap</h1>
<p class="muted" id="summary">loading status…</p>
<h2>Ports</h2>
<table id="ports"><thead><tr><th>port</th><th>link</th><th>received</th><th>packets/s</th><th>dropped</th><th>written</th></tr></thead><tbody></tbody></table>
<h2>Disk</h2>
<table id="disk"><tbody></tbody></table>
<h2>Packets</h2>
<form id="query">
 <label for="from">From (ISO 8601 with zone, or Unix seconds)</label><input id="from" name="from" placeholder="2026-11-30T02:10:00Z">
 <label for="to">To (exclusive)</label><input id="to" name="to" placeholder="2026-11-30T02:15:00Z">
 <label for="filter">Filter (libpcap)</label><input id="filter" name="filter" placeholder="host 10.0.0.1 and tcp port 443">
 <label for="community_id">Community ID</label><input id="community_id" name="community_id" placeholder="1:wCb3OG7yAFWelaUydu0D+125CLM=">
 <label for="token">Bearer token (kept in this tab only; not needed with a client certificate)</label><input id="token" type="password" autocomplete="off">
 <button type="submit" id="size">Size</button><button type="button" id="download" disabled>Download</button>
</form>
<div id="result"></div>
<script>
"use strict";
const $ = id => document.getElementById(id);
const headers = () => { const t = $("token").value || sessionStorage.getItem("linecap-token") || "";
  if ($("token").value) sessionStorage.setItem("linecap-token", $("token").value);
  return t ? { "Authorization": "Bearer " + t } : {}; };
const human = n => { const u = ["B","KiB","MiB","GiB","TiB"]; let i = 0; n = Number(n);
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; } return (i ? n.toFixed(1) : n) + " " + u[i]; };
const text = (el, s) => { el.textContent = s; return el; };
function row(tbody, cells) { const tr = tbody.insertRow(); for (const c of cells) text(tr.insertCell(), c); }
function query() { const p = new URLSearchParams();
  for (const k of ["from", "to", "filter", "community_id"]) { const v = $(k).value.trim(); if (v) p.set(k, v); }
  return p.toString(); }
async function status() {
  try {
    const r = await fetch("api/v1/status", { headers: headers() });
    const s = await r.json();
    if (!r.ok) throw new Error(s.error || r.status);
    const ports = $("ports").tBodies[0]; ports.replaceChildren();
    for (const p of s.linecapd.ports) row(ports, [p.port, p.link_up ? "up" : "down", String(p.received_packets ?? ""),
      p.received_packets_per_second !== undefined ? p.received_packets_per_second.toFixed(0) : "…",
      String(p.dropped_packets ?? 0), String(p.written_packets ?? "")]);
    const disk = $("disk").tBodies[0]; disk.replaceChildren();
    row(disk, ["directory", s.store.directory]);
    if (s.store.filesystem_size_bytes !== undefined) row(disk, ["file system", human(s.store.filesystem_free_bytes) + " free of " +
      human(s.store.filesystem_size_bytes) + " (" + s.store.filesystem_used_percent.toFixed(1) + " % used)"]);
    row(disk, ["capture files", (s.store.files ?? 0) + " files, " + human(s.store.bytes ?? 0)]);
    row(disk, ["oldest / newest file", (s.store.oldest_file_time || "–") + " / " + (s.store.newest_file_time || "–")]);
    text($("summary"), "linecapd: " + s.linecapd.state + " · queries running " + s.api.queries_running + " of " + s.api.max_queries +
      " · " + s.time);
    $("summary").className = s.linecapd.state === "up" ? "muted" : "error";
  } catch (e) { text($("summary"), "status: " + e.message).className = "error"; }
}
let sized = null;
$("query").addEventListener("submit", async ev => {
  ev.preventDefault(); $("download").disabled = true; sized = null;
  const out = text($("result"), "computing the size…"); out.className = "muted";
  try {
    const q = query(); const r = await fetch("api/v1/size?" + q, { headers: headers() }); const s = await r.json();
    if (!r.ok) throw new Error(s.error || ("HTTP " + r.status));
    text(out, s.packets + " packets, " + human(s.bytes) + " (" + s.bytes + " bytes)" +
      (s.truncated ? " — cut at " + s.truncated + " (" + human(s.max_bytes) + ")" : "") +
      (s.errors.length ? " — " + s.errors.length + " file error(s): " + s.errors[0] : ""));
    out.className = ""; out.dataset.bytes = s.bytes; out.dataset.packets = s.packets;
    sized = q; $("download").disabled = false;
    status();
  } catch (e) { text(out, e.message).className = "error"; }
});
$("download").addEventListener("click", async () => {
  if (sized === null) return;
  const out = $("result"); $("download").disabled = true;
  try {
    const r = await fetch("api/v1/packets?" + sized, { headers: headers() });
    if (!r.ok) { const s = await r.json(); throw new Error(s.error || ("HTTP " + r.status)); }
    const blob = await r.blob();
    const a = document.createElement("a"); a.href = URL.createObjectURL(blob); a.download = "linecap.pcap";
    document.body.appendChild(a); a.click(); a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 60000);
    text(out, "downloaded " + human(blob.size) + " (" + blob.size + " bytes)"); out.dataset.downloaded = blob.size;
  } catch (e) { text(out, "download: " + e.message).className = "error"; }
  $("download").disabled = false;
});
$("token").addEventListener("change", status);
status(); setInterval(status, 5000);
</script>
</body>
</html>
)HTML";
}

}  // namespace linecap::api
