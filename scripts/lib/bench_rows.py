"""Rows of scripts/bench's table, from gyre bench --json summaries.

    bench_rows.py SUMMARY.json KIND LABEL COMMAND LOAD STATUS   # prints TSV rows
    bench_rows.py --table ROWS.tsv                              # prints the Markdown table

KIND says which figures a run gives: fanout, latency, publish, broadcast,
idle, connect or wildcard. Every CPU figure is the CPU time of all the gyre
processes given to gyre bench with --pid.
"""

import json
import sys

CPU_UNIT = "µs server CPU per delivery (all gyre processes)"


def micros_to_ms(us):
    return f"{us / 1000:,.1f}"


def count(n):
    return f"{n:,.0f}"


def figures(r, kind):
    """(figure, unit) pairs of a run."""
    out = []
    s = r.get("server") or {}
    d = r.get("delivery") or {}
    p = r.get("publish") or {}
    c = r.get("connections") or {}
    if kind in ("fanout", "wildcard", "broadcast", "latency"):
        if kind == "latency":
            out.append((micros_to_ms(d["latency"]["p99_us"]), "ms p99 delivery latency"))
        out.append((f"{s.get('cpu_per_delivery_us', 0):.3f}", CPU_UNIT))
        if kind == "broadcast":
            out.append((f"{p.get('per_second', 0):.1f}", "broadcasts/s"))
        if kind != "latency":
            out.append((count(d.get("per_second", 0)), "deliveries/s"))
            out.append((micros_to_ms(d["latency"]["p99_us"]), "ms p99 delivery latency"))
        out.append((f"{count(d.get('lost', 0))} / {count(d.get('out_of_order', 0))}", "lost / out of order"))
    elif kind == "publish":
        out.append((count(p.get("per_second", 0)), "publishes/s"))
        out.append((micros_to_ms(p["latency"]["p99_us"]), "ms p99 API batch latency"))
    elif kind == "idle":
        out.append((f"{s.get('rss_per_conn', 0) / 1024:.1f}", "KiB server RSS per connection"))
        out.append((f"{s.get('cpu_percent', 0):.1f}", "% of a core while idle"))
    elif kind == "connect":
        out.append((count(c.get("per_second", 0)), "connects/s"))
        out.append((f"{s.get('cpu_per_connect_us', 0):.1f}", "µs server CPU per connect"))
        out.append((f"{count(c.get('opened', 0))} / {count(c.get('target', 0))}", "connections opened"))
    else:
        raise SystemExit(f"bench_rows: unknown kind {kind}")
    errors = r.get("errors") or []
    if errors:
        total = sum(e["count"] for e in errors)
        out.append((count(total), "errors, most of them: " + errors[0]["message"]))
    return out


def rows(path, kind, label, command, load, status):
    try:
        with open(path) as f:
            r = json.load(f)
        got = figures(r, kind)
    except (OSError, ValueError, KeyError) as e:
        got = [("failed", f"exit {status}, no summary ({type(e).__name__})")]
    else:
        if status != "0":
            got.append(("failed", f"gyre bench exit {status}"))
    for figure, unit in got:
        print("\t".join([label, command, figure, unit, load]))


def cell(s):
    return s.replace("|", "\\|")


def table(path):
    with open(path) as f:
        lines = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    # A pattern's CPU per delivery against a channel's: the wildcard
    # budget is a ratio.
    cpu = {label: figure for label, _, figure, unit, _ in lines if unit == CPU_UNIT}
    exact, pattern = cpu.get("wildcard fan-out: channel"), cpu.get("wildcard fan-out: pattern")
    try:
        ratio = f"{float(pattern) / float(exact):.2f}"
    except (TypeError, ValueError, ZeroDivisionError):
        ratio = None
    if ratio:
        lines.append(["wildcard fan-out: pattern / channel", "the two runs above, CPU per delivery", ratio, "× CPU per delivery", ""])
    print("| benchmark | command summary | figure | unit | load before |")
    print("|---|---|---|---|---|")
    for label, command, figure, unit, load in lines:
        print(f"| {cell(label)} | `{cell(command)}` | {cell(figure)} | {cell(unit)} | {cell(load)} |")


def main(argv):
    if len(argv) == 3 and argv[1] == "--table":
        table(argv[2])
    elif len(argv) == 7:
        rows(*argv[1:])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
