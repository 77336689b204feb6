#!/usr/bin/env python3
"""Gantt chart of what ran when in a few steps, from the timeline.csv of octwalk run --timeline or the file
of octwalk profile --steps K --timeline FILE.

Each row of the file is one interval: step, lane (host, host-build, device, host-walk, copy, rows, ...), phase,
start_s and end_s in seconds since the start of the run on the host's steady clock. Prints, per chosen step,
its wall span (its host lane's), each lane's busy time, how much of the host-build lane overlaps the
device lane (host-walk on the CPU backend; the pipelined step's point: the host build off the critical path)
and how long after the copy lane's drawn end of the positions' download the build thread saw it end
(copy_seen_after_us: negative when the copy is drawn late), and with -o draws the lanes as rows, the
phases as coloured bars, and the step boundaries. The chart shows everything that ran between the start
of the first chosen step and the end of the last, also what an earlier step started (a pipelined run's
background build, lane host-build, belongs to the step that started it and runs into the next).

  octwalk run --model plummer --n 4194304 --t-end 0.05 --timestep 0.01 --backend gpu --timeline --output-dir run22
  python3 scripts/plot_timeline.py run22/timeline.csv --steps 2:4 -o timeline_2e22.png
  octwalk run --model plummer --n 4194304 --t-end 0.05 --timestep 0.01 --backend gpu --rebuild-every 0 \
      --timeline --output-dir pipe22          # pipelined: lanes host, host-build (the build thread), copy, device
  python3 scripts/plot_timeline.py pipe22/timeline.csv --steps 2:4 -o pipeline_2e22.png

The table needs only the standard library; the plot needs matplotlib (Debian: python3-matplotlib).
"""

import argparse
import csv
import sys

COLUMNS = ("step", "lane", "phase", "start_s", "end_s")
# Lanes top to bottom in the order work flows through a step; others (a pipeline's own) follow.
LANE_ORDER = ("host", "host-build", "copy", "device", "mesh", "rows", "host-walk")


class InputError(Exception):
    """A file that is missing or is not a timeline (the message names it)."""


def read_timeline(path):
    """[(step, lane, phase, start, end), ...] in seconds, ordered by start."""
    try:
        with open(path, newline="") as f:
            lines = [line for line in f if not line.startswith("#")]
    except OSError as e:
        raise InputError(f"{path}: {e}")
    rows = list(csv.reader(lines))
    if not rows or tuple(rows[0]) != COLUMNS:
        raise InputError(f"{path}: not a timeline.csv (expected the columns {','.join(COLUMNS)})")
    intervals = []
    for number, r in enumerate(rows[1:], start=2):
        try:
            step, lane, phase, start, end = int(r[0]), r[1], r[2], float(r[3]), float(r[4])
        except (ValueError, IndexError):
            raise InputError(f"{path}: data row {number} is not step,lane,phase,start_s,end_s: {','.join(r)}")
        intervals.append((step, lane, phase, start, end))
    if not intervals:
        raise InputError(f"{path}: no intervals")
    intervals.sort(key=lambda i: i[3])
    return intervals


def parse_steps(text, available):
    """The steps named by 'a:b' (inclusive), 'a,b,c' or 'last:K' (the last K), among those available."""
    if text.startswith("last:"):
        return available[-int(text[5:]):]
    if ":" in text:
        a, b = (int(v) for v in text.split(":"))
        chosen = [s for s in available if a <= s <= b]
    else:
        wanted = {int(v) for v in text.split(",")}
        chosen = [s for s in available if s in wanted]
    if not chosen:
        raise InputError(f"--steps {text}: none of the steps {available[0]}..{available[-1]} in the file")
    return chosen


def lanes_of(intervals):
    present = {i[1] for i in intervals}
    return [l for l in LANE_ORDER if l in present] + sorted(present - set(LANE_ORDER))


def union_length(spans):
    """Total length covered by a set of (start, end) spans."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def overlap(a, b):
    """Length of time covered by both span sets."""
    total = 0.0
    for s0, e0 in a:
        for s1, e1 in b:
            total += max(0.0, min(e0, e1) - max(s0, s1))
    return total


def step_extent(intervals, step):
    """(start, end) of a step: of its host lane when it has one (the stepping thread; a background build
    labelled with the step may outlast it), else of all its intervals."""
    mine = [i for i in intervals if i[0] == step]
    host = [i for i in mine if i[1] == "host"] or mine
    return min(i[3] for i in host), max(i[4] for i in host)


def copy_seen_after(mine):
    """Seconds from the copy lane's drawn end of the build's input (the sorted keys, download_keys; the positions
    in timelines without it) to the build thread's end of waiting for it (host-build wait_positions), or None
    without both. Negative: the copy is drawn later than it ended."""
    copy = ([i[4] for i in mine if i[1] == "copy" and i[2] == "download_keys"] or
            [i[4] for i in mine if i[1] == "copy" and i[2] == "download_positions"])
    seen = [i[4] for i in mine if i[1] == "host-build" and i[2] == "wait_positions"]
    return seen[0] - copy[0] if len(copy) == 1 and len(seen) == 1 else None


def step_summary(intervals, steps):
    """[(step, wall, {lane: busy}, build_device_overlap, copy_seen_after or None), ...] in seconds."""
    out = []
    for step in steps:
        mine = [i for i in intervals if i[0] == step]
        begin, end = step_extent(intervals, step)
        wall = end - begin
        busy = {lane: union_length([(i[3], i[4]) for i in mine if i[1] == lane]) for lane in lanes_of(mine)}
        build = [(i[3], i[4]) for i in mine if i[1] == "host-build"]
        # The walk's lane: the device, or the CPU twin's host-walk.
        device = [(i[3], i[4]) for i in intervals if i[1] in ("device", "host-walk")]
        out.append((step, wall, busy, overlap(build, device), copy_seen_after(mine)))
    return out


def print_table(summary):
    lanes = sorted({lane for _, _, busy, _, _ in summary for lane in busy}, key=lambda l: (l not in LANE_ORDER, l))
    print("step  wall_ms  " + "  ".join(f"{l}_ms" for l in lanes) + "  build_under_device_ms  copy_seen_after_us")
    for step, wall, busy, both, seen in summary:
        cells = "  ".join(f"{1e3 * busy.get(l, 0.0):>{len(l) + 3}.3f}" for l in lanes)
        after = f"{1e6 * seen:>18.1f}" if seen is not None else f"{'-':>18}"
        print(f"{step:>4}  {1e3 * wall:>7.3f}  {cells}  {1e3 * both:>21.3f}  {after}")


def plot(intervals, steps, out, title):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as missing:
        sys.exit(f"plot_timeline.py: {missing}; the table above is complete, install python3-matplotlib for -o")
    origin = step_extent(intervals, steps[0])[0]
    window_end = step_extent(intervals, steps[-1])[1]
    # Whatever ran in the window, clipped to it: also a build an earlier step started.
    chosen = [(i[0], i[1], i[2], max(i[3], origin), min(i[4], window_end))
              for i in intervals if i[4] > origin and i[3] < window_end]
    lanes = lanes_of(chosen)
    phases = []
    for i in chosen:
        if i[2] not in phases:
            phases.append(i[2])
    # 40 distinct colours: a pipelined run has about 30 phases.
    palette = [plt.get_cmap("tab20")(k) for k in range(20)] + [plt.get_cmap("tab20b")(k) for k in range(20)]
    colour = {p: palette[k % len(palette)] for k, p in enumerate(phases)}
    fig, ax = plt.subplots(figsize=(13, 1.0 + 0.6 * len(lanes)))
    for i in chosen:
        row = lanes.index(i[1])
        ax.barh(row, 1e3 * (i[4] - i[3]), left=1e3 * (i[3] - origin), height=0.7, color=colour[i[2]],
                edgecolor="k", linewidth=0.2)
    for step in steps:
        start = 1e3 * (step_extent(intervals, step)[0] - origin)
        ax.axvline(start, color="k", ls="--", lw=0.7)
        ax.text(start, -0.6, f" step {step}", fontsize=8, va="bottom")
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels(lanes)
    ax.set_ylim(len(lanes) - 0.5, -0.75)
    ax.set_xlabel(f"ms since the start of step {steps[0]}")
    ax.grid(axis="x", alpha=0.3)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colour[p]) for p in phases]
    ax.legend(handles, phases, fontsize=7, ncol=min(len(phases), 8), loc="upper center",
              bbox_to_anchor=(0.5, -0.35 if len(lanes) < 4 else -0.2), frameon=False)
    ax.set_title(title or f"octwalk timeline, steps {steps[0]}-{steps[-1]}")
    fig.tight_layout()
    fig.savefig(out, dpi=120, bbox_inches="tight")
    print(f"\nwrote {out}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", help="timeline.csv of octwalk run --timeline or profile --timeline")
    parser.add_argument("--steps", default="last:3",
                        help="steps to show: a:b (inclusive), a,b,c or last:K (default last:3)")
    parser.add_argument("-o", "--output", help="PNG of the Gantt chart")
    parser.add_argument("--title", help="title of the chart")
    args = parser.parse_args()
    try:
        intervals = read_timeline(args.file)
        steps = parse_steps(args.steps, sorted({i[0] for i in intervals}))
    except (InputError, ValueError) as e:
        sys.exit(f"plot_timeline.py: {e}")
    print_table(step_summary(intervals, steps))
    if args.output:
        plot(intervals, steps, args.output, args.title)


if __name__ == "__main__":
    main()
