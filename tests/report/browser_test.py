#!/usr/bin/env python3
"""Loads the HTML report in headless Chromium and checks that it renders: no script errors, the
summary's outcome counts equal the results files', every scenario with samples got a chart; then
takes screenshots of the page and of one scenario.

  browser_test.py --trainrepro build/trainrepro --results DIR [--results DIR…] --out DIR
  browser_test.py --page report.html --out DIR [--expect-counts '{"passed": 3, …}' | FILE]

With --trainrepro it runs `BINARY report DIR… -o OUT/report.html` first and takes the expected
counts from the results files themselves (every *.json under DIR whose "format" is
"trainrepro-result"). With --page it tests an already written page; counts are then checked
against --expect-counts when given, and always against the page's own data object.

The page is loaded as file://…/report.html#render-all (report.js opens every scenario and draws
every chart, then sets the attributes of <div id="report-status">), and as #scenario=NAME (opens
and scrolls to one scenario). Screenshots: OUT/report.png (the page as it opens) and
OUT/scenario-NAME.png (#only=NAME: that scenario alone; headless Chromium paints nothing when a
page is scrolled, so the screenshot cannot use #scenario=NAME).

Exit status: 0 all checks passed; 1 a check failed (each failure printed); 2 bad usage or setup
(no binary, no Chromium); 77 no Chromium found and --skip-without-chromium given (CTest's
SKIP_RETURN_CODE).
Standard library only.
"""
import argparse
import glob
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request

OUTCOMES = ["passed", "reproduced", "skipped", "failed", "not-reproduced", "error"]
ATTENTION = ("failed", "not-reproduced", "error")
MAX_PAGE_BYTES = 5 * 1000 * 1000
CHROMIUMS = ["chromium-headless-shell", "headless_shell", "chromium", "chromium-browser",
             "google-chrome", "google-chrome-stable"]


class Failures:
    def __init__(self):
        self.items = []

    def check(self, ok, message):
        if not ok:
            self.items.append(message)
            print("FAIL: " + message, file=sys.stderr)
        return ok


def usage_error(message):
    print("browser_test: " + message, file=sys.stderr)
    sys.exit(2)


def find_chromium(explicit):
    if explicit:
        path = shutil.which(explicit) or (explicit if os.path.isfile(explicit) else None)
        if not path:
            usage_error("--chromium %s: not found" % explicit)
        return path
    if os.environ.get("CHROMIUM"):
        return find_chromium(os.environ["CHROMIUM"])
    for name in CHROMIUMS:
        path = shutil.which(name)
        if path:
            return path
    return None


def run_chromium(chromium, url, extra, timeout, profile):
    """Runs Chromium once; returns (stdout, stderr)."""
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--no-first-run", "--mute-audio", "--user-data-dir=" + profile,
           "--virtual-time-budget=10000", "--run-all-compositor-stages-before-draw",
           "--enable-logging=stderr", "--v=0"] + extra + [url]
    try:
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "Chromium did not finish within %d s: %s" % (timeout, " ".join(cmd))
    return done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")


def console_lines(stderr):
    """Lines where the page wrote to the console or threw: report.js itself never logs, so any
    console message (console.error, an uncaught exception, a refused resource) is a failure."""
    return [l for l in stderr.splitlines()
            if re.search(r"CONSOLE[:(]", l) or "Uncaught" in l]


class StatusParser(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.status = None
        self.open_scenarios = []
        self._in_open = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id") == "report-status":
            self.status = a
        if tag == "details" and "open" in a:
            self.open_scenarios.append(a.get("data-name"))


def parse_dom(dom):
    p = StatusParser()
    p.feed(dom)
    return p


def page_data(page_text):
    m = re.search(r'<script id="report-data" type="application/json">(.*?)</script>', page_text, re.S)
    if not m:
        return None, "the page has no <script id=\"report-data\" type=\"application/json\">"
    try:
        return json.loads(m.group(1)), None
    except ValueError as e:
        return None, "the page's data is not JSON: %s" % e


def counts_from_results(dirs):
    """Outcome counts from the results files, read directly; and the files that are not results."""
    counts = {o: 0 for o in OUTCOMES}
    not_results = []
    files = []
    for d in dirs:
        if os.path.isfile(d):
            files.append(d)
        else:
            files += sorted(glob.glob(os.path.join(d, "**", "*.json"), recursive=True))
    for f in files:
        try:
            with open(f, encoding="utf-8") as fh:
                j = json.load(fh)
        except (OSError, ValueError) as e:
            not_results.append("%s (%s)" % (f, e))
            continue
        if not isinstance(j, dict) or j.get("format") != "trainrepro-result" or j.get("outcome") not in OUTCOMES:
            not_results.append("%s (not a trainrepro-result file)" % f)
            continue
        counts[j["outcome"]] += 1
    return counts, not_results, len(files)


def status_int(status, key):
    try:
        return int(status.get(key))
    except (TypeError, ValueError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trainrepro", help="the trainrepro binary: runs `BINARY report RESULTS… -o OUT/report.html`")
    ap.add_argument("--results", action="append", default=[], help="a results folder or file (repeatable)")
    ap.add_argument("--page", help="test this already written page instead of running trainrepro")
    ap.add_argument("--out", required=True, help="folder for report.html (with --trainrepro) and the screenshots")
    ap.add_argument("--expect-counts", help="JSON object or file: outcome -> count (with --page)")
    ap.add_argument("--scenario", help="the scenario to open and screenshot (default: the first with charts that needs "
                    "attention, else the first reproduced one with charts)")
    ap.add_argument("--chromium", help="the Chromium binary (default: $CHROMIUM, else chromium-headless-shell, chromium, …)")
    ap.add_argument("--timeout", type=int, default=120, help="seconds for each Chromium run (default 120)")
    ap.add_argument("--max-bytes", type=int, default=MAX_PAGE_BYTES, help="largest page allowed (default 5 MB)")
    ap.add_argument("--skip-without-chromium", action="store_true", help="exit 77 (skipped) when no Chromium is found")
    args = ap.parse_args()

    if bool(args.page) == bool(args.trainrepro):
        usage_error("give either --page FILE or --trainrepro BINARY with --results DIR")
    if args.trainrepro and not args.results:
        usage_error("--trainrepro needs --results DIR")
    os.makedirs(args.out, exist_ok=True)
    chromium = find_chromium(args.chromium)
    if not chromium:
        if args.skip_without_chromium:
            print("browser_test: SKIPPED: no headless Chromium found (tried %s; set $CHROMIUM)" % ", ".join(CHROMIUMS))
            sys.exit(77)
        usage_error("no headless Chromium found (tried %s; set $CHROMIUM or --chromium)" % ", ".join(CHROMIUMS))

    fail = Failures()
    expected = None
    expected_unreadable = None
    if args.trainrepro:
        if not os.path.isfile(args.trainrepro):
            usage_error("--trainrepro %s: no such file" % args.trainrepro)
        page = os.path.join(args.out, "report.html")
        if os.path.exists(page):
            os.remove(page)
        cmd = [args.trainrepro, "report"] + args.results + ["-o", page]
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
        expected, not_results, nfiles = counts_from_results(args.results)
        expected_unreadable = len(not_results)
        want_rc = 0 if not not_results else 2
        fail.check(done.returncode == want_rc,
                   "`%s` exited %d, expected %d%s\n  stderr: %s" % (
                       " ".join(cmd), done.returncode, want_rc,
                       " (these files are not results: %s)" % "; ".join(not_results) if not_results else "",
                       done.stderr.decode("utf-8", "replace").strip()[-2000:]))
        if not os.path.isfile(page):
            fail.check(False, "`%s` wrote no page" % " ".join(cmd))
            return finish(fail)
        print("browser_test: %s: %d results files, expected outcomes %s" % (page, nfiles, json.dumps(expected)))
    else:
        page = args.page
        if not os.path.isfile(page):
            usage_error("--page %s: no such file" % page)
        if args.expect_counts:
            text = args.expect_counts
            if os.path.isfile(text):
                text = open(text, encoding="utf-8").read()
            try:
                given = json.loads(text)
            except ValueError as e:
                usage_error("--expect-counts is not JSON: %s" % e)
            unknown = [k for k in given if k not in OUTCOMES]
            if unknown:
                usage_error("--expect-counts: unknown outcomes %s (known: %s)" % (unknown, ", ".join(OUTCOMES)))
            expected = {o: int(given.get(o, 0)) for o in OUTCOMES}

    # --- the page file itself ---
    page = os.path.abspath(page)
    size = os.path.getsize(page)
    print("browser_test: page %s: %d bytes" % (page, size))
    fail.check(size <= args.max_bytes, "the page is %d bytes, more than %d" % (size, args.max_bytes))
    text = open(page, encoding="utf-8", errors="replace").read()
    for ph in ("{{title}}", "{{report.css}}", "{{charts.js}}", "{{report.js}}", "{{data}}"):
        fail.check(ph not in text, "the page still holds the placeholder %s" % ph)
    data, err = page_data(text)
    fail.check(data is not None, err or "")
    outside = re.sub(r'<script id="report-data" type="application/json">.*?</script>', "", text, flags=re.S)
    external = re.findall(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//[^"'\s>]+|url\(\s*["']?(?:https?:)?//[^)]+\)|@import""", outside, re.I)
    fail.check(not external, "the page refers to outside resources: %s" % external[:5])

    scenarios = data.get("scenarios", []) if isinstance(data, dict) else []
    from_data = {o: 0 for o in OUTCOMES}
    for s in scenarios:
        o = s.get("outcome") if isinstance(s, dict) else None
        from_data[o if o in OUTCOMES else "error"] += 1
    if expected is not None:
        fail.check(from_data == expected, "the page's data has outcomes %s, the results %s" % (json.dumps(from_data), json.dumps(expected)))
    else:
        expected = from_data
    if expected_unreadable is not None and isinstance(data, dict):
        listed = data.get("unreadable") or []
        fail.check(len(listed) == expected_unreadable,
                   "the page lists %d unreadable files, %d files in the results are not results files: %s" % (
                       len(listed), expected_unreadable, json.dumps(listed)[:2000]))

    url = urllib.parse.urljoin("file:", urllib.request.pathname2url(page))
    profile = tempfile.mkdtemp(prefix="report-browser-test-")
    try:
        # --- everything rendered ---
        dom, stderr = run_chromium(chromium, url + "#render-all", ["--dump-dom"], args.timeout, profile)
        if dom is None:
            fail.check(False, stderr)
            return finish(fail)
        with open(os.path.join(args.out, "render-all.dom.html"), "w", encoding="utf-8") as fh:
            fh.write(dom)
        st = parse_dom(dom).status
        if not fail.check(st is not None, "#render-all: no <div id=\"report-status\"> in the rendered page (see %s)" %
                          os.path.join(args.out, "render-all.dom.html")):
            return finish(fail)
        print("browser_test: #render-all status: " + " ".join("%s=%s" % (k, v) for k, v in sorted(st.items()) if k.startswith("data-")))
        fail.check(st.get("data-done") == "1", "#render-all: data-done is %r, not 1: the page did not finish rendering" % st.get("data-done"))
        fail.check(st.get("data-errors") == "0", "#render-all: data-errors is %r: the page had script errors" % st.get("data-errors"))
        logs = console_lines(stderr)
        fail.check(not logs, "#render-all: console messages or uncaught errors:\n  " + "\n  ".join(logs[:20]))
        shown = {o: status_int(st, "data-outcome-" + o) for o in OUTCOMES}
        fail.check(shown == expected, "#render-all: the summary shows %s, expected %s" % (json.dumps(shown), json.dumps(expected)))
        fail.check(status_int(st, "data-scenarios") == sum(expected.values()),
                   "#render-all: the table has %s scenarios, expected %d" % (st.get("data-scenarios"), sum(expected.values())))
        with_samples = status_int(st, "data-scenarios-with-samples")
        charted = status_int(st, "data-charted-scenarios")
        fail.check(with_samples is not None and charted == with_samples,
                   "#render-all: %s of %s scenarios with samples have a chart" % (charted, with_samples))
        if with_samples:
            fail.check((status_int(st, "data-charts") or 0) >= with_samples, "#render-all: only %s charts" % st.get("data-charts"))

        # --- one scenario, by its hash ---
        pick = args.scenario
        if not pick:
            def has_samples(s):
                g, m = s.get("gradients") or {}, s.get("memory") or {}
                return bool(g.get("steps") or m.get("steps"))
            named = [s for s in scenarios if isinstance(s, dict) and s.get("name")]
            ranked = [s for s in named if s.get("outcome") in ATTENTION and has_samples(s)] or \
                     [s for s in named if s.get("outcome") == "reproduced" and has_samples(s)] or \
                     [s for s in named if has_samples(s)] or named
            pick = ranked[0]["name"] if ranked else None
        if pick:
            quoted = urllib.parse.quote(pick, safe="")
            dom, stderr = run_chromium(chromium, url + "#scenario=" + quoted, ["--dump-dom"], args.timeout, profile)
            if fail.check(dom is not None, stderr):
                p = parse_dom(dom)
                st = p.status or {}
                fail.check(st.get("data-done") == "1" and st.get("data-errors") == "0",
                           "#scenario=%s: data-done=%r data-errors=%r" % (pick, st.get("data-done"), st.get("data-errors")))
                fail.check(st.get("data-scenario-opened") == pick,
                           "#scenario=%s: the page opened %r" % (pick, st.get("data-scenario-opened")))
                fail.check(pick in p.open_scenarios, "#scenario=%s: its section is not open" % pick)
                logs = console_lines(stderr)
                fail.check(not logs, "#scenario=%s: console messages:\n  %s" % (pick, "\n  ".join(logs[:20])))

        # --- screenshots ---
        shots = [(url, os.path.join(args.out, "report.png"))]
        if pick:
            safe = re.sub(r"[^A-Za-z0-9._-]+", "_", pick)
            shots.append((url + "#only=" + urllib.parse.quote(pick, safe=""), os.path.join(args.out, "scenario-%s.png" % safe)))
        for u, png in shots:
            if os.path.exists(png):
                os.remove(png)
            out, stderr = run_chromium(chromium, u, ["--screenshot=" + png, "--window-size=1400,2400"], args.timeout, profile)
            ok = out is not None and os.path.isfile(png)
            fail.check(ok, "no screenshot %s: %s" % (png, stderr.strip()[-1000:]))
            if ok:
                # a blank 1400x2400 PNG compresses to about 15 KB; a drawn page is far larger
                fail.check(os.path.getsize(png) > 40000, "screenshot %s is only %d bytes: probably blank" % (png, os.path.getsize(png)))
                logs = console_lines(stderr)
                fail.check(not logs, "%s: console messages:\n  %s" % (u, "\n  ".join(logs[:20])))
                print("browser_test: screenshot %s (%d bytes)" % (png, os.path.getsize(png)))
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    return finish(fail)


def finish(fail):
    if fail.items:
        print("browser_test: %d check(s) failed" % len(fail.items), file=sys.stderr)
        sys.exit(1)
    print("browser_test: all checks passed")
    sys.exit(0)


if __name__ == "__main__":
    main()
