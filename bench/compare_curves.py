#!/usr/bin/env python3
"""Compares a float32 training run's loss curve with PyTorch's, against the
exact (float64) curve, for bench/train_curve.sh and bench/hf_finetune_curve.sh.

    compare_curves.py EXACT TORCH OURS FLOOR

EXACT, TORCH, OURS: "step loss" lines. Prints the curves at every 25th step
and each float32 run's distance from the exact one, and exits 1 when ours is
more than twice PyTorch's (or FLOOR, if that is larger): training is
chaotic, so after some steps float32 rounding alone moves any run away from
the exact curve, and the fair yardstick is how far PyTorch's moves.
"""
import math
import sys


def curve(path):
    return dict((int(l.split()[0]), float(l.split()[1])) for l in open(path) if l.strip())


def main():
    exact, torch, ours = curve(sys.argv[1]), curve(sys.argv[2]), curve(sys.argv[3])
    floor = float(sys.argv[4])
    steps = sorted(exact)
    missing = [s for s in steps if s not in ours]
    if missing:
        sys.exit(f"compare_curves: dlcaffe logged no loss for {len(missing)} steps (first {missing[0]})")
    print(f"{'step':>5} {'float64':>9} {'pytorch':>9} {'dlcaffe':>9}")
    for s in steps:
        if s % 25 == 0 or s == steps[-1]:
            print(f"{s:5d} {exact[s]:9.5f} {torch[s]:9.5f} {ours[s]:9.5f}")

    # The curves are the means of 10-step windows (single steps are each
    # batch's loss); each float32 run's distance from the exact one is the
    # mean relative difference of those means.
    def distance(run):
        d = []
        for w in range(0, len(steps) - 9, 10):
            a = sum(exact[s] for s in steps[w:w + 10]) / 10
            b = sum(run[s] for s in steps[w:w + 10]) / 10
            d.append(abs(b - a) / a if math.isfinite(b) else math.inf)
        return sum(d) / len(d), max(d)

    ours_mean, ours_max = distance(ours)
    torch_mean, torch_max = distance(torch)
    first = next((s for s in steps if abs(ours[s] - exact[s]) > 1e-3 * exact[s]), None)
    torch_first = next((s for s in steps if abs(torch[s] - exact[s]) > 1e-3 * exact[s]), None)
    bound = max(floor, 2 * torch_mean)
    print(f"distance from the float64 curve (mean / largest over 10-step means): dlcaffe "
          f"{ours_mean:.2%} / {ours_max:.2%}, PyTorch float32 {torch_mean:.2%} / {torch_max:.2%}; "
          f"first step 0.1% off: dlcaffe {first}, PyTorch {torch_first}; "
          f"bound max({floor:.0%}, 2 x PyTorch's mean) = {bound:.2%}")
    sys.exit(0 if ours_mean <= bound else 1)


if __name__ == "__main__":
    main()
