#!/usr/bin/env python3
"""page_cdp.py CHROMIUM URL DOWNLOAD_DIR OUT_JSON FIELDS_JSON: drives headless Chromium
through the DevTools protocol over a pipe (--remote-debugging-pipe: no port, no websocket
library): loads the page, waits for its status to show, fills the query form, submits it,
waits for the size, clicks Download and waits for Chromium to report the download
complete. Every wait is on an event or a promise the page resolves, never a sleep.
Writes {"status_text", "ports", "size_text", "size_bytes", "download"} to OUT_JSON."""
import json
import os
import subprocess
import sys
import tempfile

chromium, url, download_dir, out_json, fields = sys.argv[1:6]
fields = json.loads(fields)
TIMEOUT_MS = 180000  # a loaded machine starts Chromium slowly; each wait still ends on an event

# fd 3: what Chromium reads (our commands); fd 4: what it writes (answers, events).
to_chrome_r, to_chrome_w = os.pipe()
from_chrome_r, from_chrome_w = os.pipe()


def child_fds():
    # Copies first: a pipe end may itself be fd 3 or 4 (dup2 onto itself keeps close-on-exec).
    a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)
    os.dup2(a, 3)
    os.dup2(b, 4)
    os.set_inheritable(3, True)
    os.set_inheritable(4, True)


profile = tempfile.mkdtemp(prefix="lc-chromium-")
proc = subprocess.Popen(
    [chromium, "--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
     "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
     "--user-data-dir=" + profile, "about:blank"],
    preexec_fn=child_fds, close_fds=False,  # fds 3 and 4 are set up by child_fds
    stdout=subprocess.DEVNULL, stderr=open(os.path.join(download_dir, "chromium.log"), "wb"))
os.close(to_chrome_r)
os.close(from_chrome_w)
reader = os.fdopen(from_chrome_r, "rb", buffering=0)
buf = b""
next_id = 0
events = []


def step(what):
    print(f"page_cdp: {what}", file=sys.stderr, flush=True)


def read_message():
    global buf
    while b"\0" not in buf:
        chunk = reader.read(1 << 16)
        if not chunk:
            raise SystemExit("chromium closed the DevTools pipe (see chromium.log)")
        buf += chunk
    msg, buf = buf.split(b"\0", 1)
    return json.loads(msg)


def send(method, params=None, session=None):
    global next_id
    next_id += 1
    msg = {"id": next_id, "method": method, "params": params or {}}
    if session:
        msg["sessionId"] = session
    os.write(to_chrome_w, json.dumps(msg).encode() + b"\0")
    while True:
        m = read_message()
        if m.get("id") == next_id:
            if "error" in m:
                raise SystemExit(f"{method}: {m['error']}")
            return m["result"]
        events.append(m)


def wait_event(method, match=lambda p: True):
    while True:
        for i, e in enumerate(events):
            if e.get("method") == method and match(e.get("params", {})):
                return events.pop(i)["params"]
        events.append(read_message())


def evaluate(session, expression):
    r = send("Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True,
                                  "timeout": TIMEOUT_MS}, session)
    if "exceptionDetails" in r:
        raise SystemExit(f"page script failed: {r['exceptionDetails']}")
    return r["result"].get("value")


# A promise that resolves with fn() once it is truthy, re-checked on every DOM change; after
# UNTIL_S without that, it fails with what the page shows (so a failure says why).
UNTIL_S = 90


def until(js_fn):
    return f"""new Promise((resolve, reject) => {{
  const check = () => {{ try {{ const v = ({js_fn})(); if (v) {{ obs.disconnect(); clearTimeout(timer); resolve(v); }} }} catch (e) {{}} }};
  const obs = new MutationObserver(check);
  const timer = setTimeout(() => {{ obs.disconnect();
    reject(new Error("not seen within {UNTIL_S} s; the page shows: " + document.body.innerText.replace(/\\s+/g, " ").slice(0, 600))); }},
    {UNTIL_S * 1000});
  obs.observe(document.body, {{subtree: true, childList: true, characterData: true, attributes: true}});
  check();
}})"""


try:
    targets = send("Target.getTargets")["targetInfos"]
    page = next(t for t in targets if t["type"] == "page")
    session = send("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})["sessionId"]
    send("Browser.setDownloadBehavior", {"behavior": "allowAndName", "downloadPath": download_dir, "eventsEnabled": True})
    send("Page.enable", session=session)
    send("Page.navigate", {"url": url}, session)
    wait_event("Page.loadEventFired")
    step("page loaded")
    result = {}
    # Before the token is entered the status says authentication is required.
    result["status_before_token"] = evaluate(session, until("() => { const t = document.getElementById('summary').textContent; return t.startsWith('status:') || t.startsWith('linecapd') ? t : null; }"))
    fill = "; ".join(f"document.getElementById({json.dumps(k)}).value = {json.dumps(v)}" for k, v in fields.items())
    evaluate(session, fill + "; document.getElementById('size').click(); true")
    step("form filled and submitted")
    result["size_text"] = evaluate(session, until("() => { const r = document.getElementById('result'); return r.dataset.bytes !== undefined || r.className === 'error' ? r.textContent : null; }"))
    result["size_bytes"] = evaluate(session, "Number(document.getElementById('result').dataset.bytes)")
    step("size shown: " + str(result["size_text"]))
    evaluate(session, "document.getElementById('download').click(); true")
    begin = wait_event("Browser.downloadWillBegin")
    done = wait_event("Browser.downloadProgress", lambda p: p.get("guid") == begin["guid"] and p.get("state") in ("completed", "canceled"))
    if done["state"] != "completed":
        raise SystemExit("download canceled")
    step("download complete")
    result["download"] = os.path.join(download_dir, begin["guid"])
    result["suggested_name"] = begin.get("suggestedFilename")
    result["page_after"] = evaluate(session, until("() => { const t = document.getElementById('result').textContent; return t.startsWith('downloaded') ? t : null; }"))
    step("page says: " + str(result["page_after"]))
    # With the token, the status (fetched again after the size) shows linecapd's ports.
    result["status_text"] = evaluate(session, until("() => { const t = document.getElementById('summary').textContent; return t.startsWith('linecapd') ? t : null; }"))
    result["ports"] = evaluate(session, "[...document.querySelectorAll('#ports tbody tr')].map(r => [...r.cells].map(c => c.textContent))")
    step("status shown: " + str(result["status_text"]))
    with open(out_json, "w") as f:
        json.dump(result, f, indent=1)
    try:
        send("Browser.close")
    except SystemExit:
        pass
finally:
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    subprocess.run(["rm", "-rf", profile])
