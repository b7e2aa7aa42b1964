"""Draws the benchmark chart from results.json: each target's throughput
figures as a ratio to the direct connection of the same kind, and the
open-loop latency percentiles. Usage: chart.py RESULTS_JSON OUT_PNG"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

RATIOS = [
    ("bulk", "bulk"),
    ("bodies_1m", "1 MiB bodies"),
    ("rps_keepalive", "req/s keep-alive"),
    ("rps_new_conn", "req/s new conn"),
    ("handshakes", "TLS handshakes/s"),
]


def main(results_path, png_path):
    with open(results_path) as f:
        results = json.load(f)
    targets = results["targets"]
    medians = {
        (t["name"], m): r.get("median") for t in targets for m, r in t["metrics"].items()
    }
    compared = [t for t in targets if t["name"] != t["baseline"]]

    fig, (left, right) = plt.subplots(1, 2, figsize=(15, 5.5), gridspec_kw={"width_ratios": [3, 2]})
    width = 0.8 / max(len(compared), 1)
    for i, target in enumerate(compared):
        xs, ys = [], []
        for j, (key, _) in enumerate(RATIOS):
            value = medians.get((target["name"], key))
            base = medians.get((target["baseline"], key))
            if value and base:
                xs.append(j + (i - (len(compared) - 1) / 2) * width)
                ys.append(value / base)
        bars = left.bar(xs, ys, width, label=f'{target["name"]} (vs {target["baseline"]})')
        left.bar_label(bars, fmt="%.2f", fontsize=6, rotation=90, padding=2)
    left.axhline(1.0, color="black", linewidth=0.8)
    left.set_xticks(range(len(RATIOS)), [label for _, label in RATIOS])
    left.set_ylabel("ratio to direct (1 = as fast)")
    left.margins(y=0.15)
    left.set_title("Throughput relative to a direct connection")
    left.legend(fontsize=8)

    names, p50, p99, p999 = [], [], [], []
    for target in targets:
        latency = target["metrics"].get("latency", {}).get("latency")
        if latency:
            names.append(target["name"])
            p50.append(latency["p50_ms"])
            p99.append(latency["p99_ms"])
            p999.append(latency["p999_ms"])
    ys = range(len(names))
    right.barh([y - 0.25 for y in ys], p50, 0.25, label="p50")
    right.barh(ys, p99, 0.25, label="p99")
    right.barh([y + 0.25 for y in ys], p999, 0.25, label="p99.9")
    right.set_yticks(list(ys), names)
    right.invert_yaxis()
    right.set_xscale("log")
    right.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    right.xaxis.set_minor_formatter(matplotlib.ticker.ScalarFormatter())
    right.tick_params(axis="x", which="minor", labelsize=7)
    right.set_xlabel("ms (log scale)")
    right.set_title(f'Latency at {results["sizes"]["rate"]} req/s (open loop)')
    right.legend(fontsize=8)

    machine = results["machine"]
    fig.suptitle(
        f'Sluice benchmarks, {results["date"]}: {machine["cpu"]}, {machine["cores"]} cores'
        + (" (smoke run)" if results["smoke"] else "")
    )
    fig.tight_layout()
    fig.savefig(png_path, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
