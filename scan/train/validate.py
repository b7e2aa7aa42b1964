#!/usr/bin/env python3
"""Leave-one-source-out validation on the training sources only.

    python3 scan/train/validate.py [--cache DIR] [--only NAME ...] [--seeds N ...] [--drop NAME ...] [--l2 X]

For each source group named below, trains `train.py`'s model without it
(its attacks and its benign texts), calibrates as `train.py` does, and
scores the group's texts: the share of its attacks and of its benign texts
at or above 0.8 (the model alone, on the whole text; the Rust detector's
rules and its reading around anchors are not in this figure). `older` is
every group added with issue 44's sources held out at once: the model as it
was. Nothing here reads the held-out split. Writes JSON lines to stdout.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import sources  # noqa: E402
import train  # noqa: E402

# The sources added for issue 44, each held out in turn.
NEW = ["aib", "agent-threat-bench", "code-ipi", "deepteam", "mind2web-tasks"]
# Benign sources that can be held out too (`--only`): the false positives a
# fit gives on a kind of benign text it never saw.
BENIGN = ["debian-doc", "python-stdlib", "chatterbot-corpus", "wordnet-glosses", "spamassassin-ham", "business"]


def group(src: str) -> str:
    return src.split("/")[0]


def run(name, out_groups, attacks, benign, seed, drop, l2):
    keep_a = [x for x in attacks if group(x[1]) not in out_groups | drop]
    keep_b = [x for x in benign if group(x[1]) not in out_groups | drop]
    q, scale, bias, z80, _ = train.fit(keep_a, keep_b, seed, l2)
    row = {"held_out": name, "seed": seed, "l2": l2, "dropped": sorted(drop), "z80": round(z80, 3)}
    for g in sorted(out_groups):
        a = [t for t, s in attacks if group(s) == g]
        b = [t for t, s in benign if group(s) == g]
        for label, texts in (("attacks", a), ("benign", b)):
            zs = [train.text_logit(t, q, scale, bias) for t in texts]
            zs = [z for z in zs if z is not None]
            if zs:
                row[f"{g} {label} at 0.8"] = f"{sum(z >= z80 for z in zs)}/{len(zs)}"
    print(json.dumps(row), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", default="/tmp/sluice-train")
    ap.add_argument("--only", nargs="*")
    # Fits differ with the seed (the calibration split, the order): a
    # figure is worth comparing only across several.
    ap.add_argument("--seeds", type=int, nargs="*", default=[train.SEED])
    ap.add_argument("--drop", nargs="*", default=[], help="groups left out of every run")
    # The fits here hold issue 44's sources: `train.py --extra`'s L2 by
    # default (train.L2, the shipped fit's, gives the older tables).
    ap.add_argument("--l2", type=float, default=train.L2_EXTRA)
    args = ap.parse_args()
    roots = train.fetch(args.cache)
    attacks, benign = sources.training(roots, train.SEED, extra=True)
    todo = [("older", set(NEW))] + [(g, {g}) for g in NEW + BENIGN]
    for name, out in todo:
        if (args.only and name not in args.only) or (not args.only and name in BENIGN):
            continue
        for seed in args.seeds:
            run(name, out, attacks, benign, seed, set(args.drop), args.l2)


if __name__ == "__main__":
    main()
