#!/usr/bin/env python3
"""Instructions per iteration of a kernel's innermost loops, from SASS (cuobjdump -sass) or PTX.

Finds every backward branch of one kernel whose body holds a given opcode (default: the reciprocal
square root, MUFU.RSQ in SASS, rsqrt in PTX) and prints its opcode counts, so that an instruction
count per interaction is the total divided by the pairs one iteration evaluates.

  cuobjdump -sass build/device/CMakeFiles/octwalk_device.dir/direct_gpu.cu.o > direct.sass
  python3 scripts/count_loop_instructions.py direct.sass directSliceKernelIfLi4
  nvcc ... -ptx device/direct_gpu.cu -o direct.ptx   (no cuobjdump needed)
  python3 scripts/count_loop_instructions.py direct.ptx directSliceKernelIfLi4
"""
import argparse
import collections
import re
import sys


def kernel_lines(lines, kernel):
    """The lines of the first function whose header names kernel (SASS 'Function :' or PTX '.entry')."""
    out, inside = [], False
    for line in lines:
        header = re.match(r"\s*(Function : |\.visible \.entry |\.entry )(\S+)", line)
        if header:
            if inside:
                break
            inside = kernel in header.group(2)
            continue
        if inside:
            out.append(line)
    return out


def sass_instructions(lines):
    """(address, opcode, branch target or None) per SASS instruction; labels resolve to addresses."""
    labels, rows, pending = {}, [], []
    for line in lines:
        label = re.match(r"\s*(\.L_x_\d+):", line)
        if label:
            pending.append(label.group(1))
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)(.*?);", line)
        if not m:
            continue
        address = int(m.group(1), 16)
        for name in pending:
            labels[name] = address
        pending = []
        target = None
        if m.group(3).startswith("BRA"):
            t = re.search(r"\(?(\.L_x_\d+)\)?|0x([0-9a-f]+)", m.group(4))
            if t:
                target = t.group(1) or int(t.group(2), 16)
        rows.append((address, m.group(3), target))
    return [(a, op, labels.get(t, t) if isinstance(t, str) else t) for a, op, t in rows]


def ptx_instructions(lines):
    """(index, opcode, branch target or None) per PTX instruction; labels resolve to indices."""
    labels, rows = {}, []
    for line in lines:
        s = line.strip()
        label = re.match(r"(\$L__\w+):", s)
        if label:
            labels[label.group(1)] = len(rows)
            continue
        if not s or s.startswith(("//", ".", "{", "}", ")")):
            continue
        s = re.sub(r"^@!?%p\d+\s+", "", s)
        op = s.split()[0].rstrip(";")
        t = re.search(r"bra(?:\.uni)?\s+(\$L__\w+);", s)
        rows.append((len(rows), op, t.group(1) if t else None))
    return [(i, op, labels.get(t) if t else None) for i, op, t in rows]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("listing", help="cuobjdump -sass output or a .ptx file")
    parser.add_argument("kernel", help="a substring of the kernel's mangled name")
    parser.add_argument("--opcode", default=None, help="opcode a counted loop must hold (default: the rsqrt)")
    parser.add_argument("--pairs", type=int, default=None, help="pairs one iteration evaluates: print per pair too")
    args = parser.parse_args()
    lines = open(args.listing).read().splitlines()
    body = kernel_lines(lines, args.kernel)
    if not body:
        sys.exit(f"no function matching {args.kernel} in {args.listing}")
    ptx = args.listing.endswith(".ptx")
    rows = ptx_instructions(body) if ptx else sass_instructions(body)
    needle = args.opcode or ("rsqrt" if ptx else "MUFU.RSQ")
    position = {key: n for n, (key, _, _) in enumerate(rows)}
    loops = [(position[t], n) for n, (_, _, t) in enumerate(rows) if t in position and position[t] <= n]
    innermost = [(b, e) for b, e in loops if not any(b <= b2 and e2 <= e and (b2, e2) != (b, e) for b2, e2 in loops)]
    found = False
    for begin, end in innermost:
        counts = collections.Counter(op for _, op, _ in rows[begin : end + 1])
        if not any(needle in op for op in counts):
            continue
        found = True
        size = end - begin + 1
        per_pair = f" = {size / args.pairs:.3f} a pair over {args.pairs} pairs" if args.pairs else ""
        print(f"innermost loop of {size} instructions{per_pair}:")
        for op, c in counts.most_common():
            print(f"  {c:6d}  {op}")
    if not found:
        sys.exit(f"no innermost loop holding {needle} in {args.kernel}")


if __name__ == "__main__":
    main()
