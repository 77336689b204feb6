#!/usr/bin/env python3
"""Instructions per interaction in the innermost loops of the GPU kernels, from SASS or PTX.

Reads `cuobjdump -sass` (SASS) or `nvcc -ptx` (PTX) text from a file or stdin. In every kernel whose
mangled name contains the filter, each innermost loop (a backward branch and the instructions from its
target up to it, with no such loop inside) that holds the counted opcode (default: the reciprocal square
root, MUFU.RSQ in SASS, rsqrt in PTX) is an interaction loop: every interaction takes exactly one rsqrt, so
instructions / rsqrts is the cost per interaction, loads, the loop test and the branch included. With
--pairs N the loop's size is also divided by the N pairs one iteration evaluates (for kernels that do not
take one rsqrt per pair); --counts lists every opcode of the loop.

  cuobjdump -sass build/device/CMakeFiles/octwalk_device.dir/forces_gpu.cu.o > forces.sass
  python3 dev/count_loop_instructions.py ILb0ELb0ELi2ELb1 forces.sass
  cuobjdump -sass build/device/CMakeFiles/octwalk_device.dir/direct_gpu.cu.o \\
      | python3 dev/count_loop_instructions.py directSliceKernelIfLi4 --pairs 64 --counts
  nvcc ... -ptx device/direct_gpu.cu -o direct.ptx   (no cuobjdump needed)
  python3 dev/count_loop_instructions.py directSliceKernelIfLi4 direct.ptx
"""
import argparse
import collections
import re
import sys

SASS_FUNC = re.compile(r"^\s*Function : (\S+)")
SASS_INSTR = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?);")
SASS_BRA = re.compile(r"\bBRA\b.*?(?:0x([0-9a-f]+)|`?\(?(\.L_x_\d+)\)?`?)")
SASS_LABEL = re.compile(r"^\s*(\.L_x_\d+):")
PTX_FUNC = re.compile(r"^(?:\.visible\s+|\.weak\s+)?\.entry\s+(\S+?)\(")
PTX_LABEL = re.compile(r"^(\$L__\w+):")
PTX_BRA = re.compile(r"\bbra(?:\.uni)?\s+(\$L__\w+);")


def opcode(text, ptx):
    """The mnemonic of an instruction without its predicate (SASS keeps its modifiers: MUFU.RSQ)."""
    words = text.split()
    if words and (words[0].startswith("@")):
        words = words[1:]
    if not words:
        return ""
    return words[0].rstrip(";")


def parse(lines):
    """Kernels as lists of (label or address, instruction text or None, branch target or None); is it PTX."""
    kernels, name, body = {}, None, []
    ptx = any(line.startswith(".version") for line in lines[:50])
    for line in lines:
        m = (PTX_FUNC if ptx else SASS_FUNC).match(line)
        if m:
            if name:
                kernels[name] = body
            name, body = m.group(1), []
            continue
        if name is None:
            continue
        if ptx:
            text = line.strip()
            label = PTX_LABEL.match(text)
            if label:
                body.append((label.group(1), None, None))
                continue
            if not text or text.startswith(("//", ".", "{", "}", ")")) or text.endswith("{"):
                continue
            b = PTX_BRA.search(text)
            body.append((None, text.rstrip(";"), b.group(1) if b else None))
        else:
            label = SASS_LABEL.match(line)
            if label:
                body.append((label.group(1), None, None))
                continue
            m = SASS_INSTR.match(line)
            if not m:
                continue
            b = SASS_BRA.search(m.group(2))
            target = None
            if b:
                target = int(b.group(1), 16) if b.group(1) else b.group(2)
            body.append((int(m.group(1), 16), m.group(2), target))
    if name:
        kernels[name] = body
    return kernels, ptx


def innermost_loops(body):
    """(first, last) indices of every backward branch's range that holds no other such range."""
    where = {}
    for i, (key, _, _) in enumerate(body):
        if key is not None:
            where.setdefault(key, i)
    found = [(where[t], i) for i, (_, text, t) in enumerate(body)
             if text is not None and t is not None and t in where and where[t] <= i]
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kernel", nargs="?", default="Kernel", help="a substring of the kernels' mangled names")
    parser.add_argument("listing", nargs="?", default="-", help="cuobjdump -sass output or a .ptx file (default stdin)")
    parser.add_argument("--opcode", default=None, help="opcode an interaction loop must hold (default: the rsqrt)")
    parser.add_argument("--pairs", type=int, default=None, help="pairs one iteration evaluates: print per pair too")
    parser.add_argument("--counts", action="store_true", help="list every opcode of each loop")
    args = parser.parse_args()
    text = sys.stdin.read() if args.listing == "-" else open(args.listing).read()
    kernels, ptx = parse(text.splitlines())
    needle = args.opcode or ("rsqrt" if ptx else "MUFU.RSQ")

    def hits(instr):
        return sum(1 for t in instr if needle in opcode(t, ptx))

    found = False
    for name, body in kernels.items():
        if args.kernel not in name:
            continue
        ranges = [r for r in innermost_loops(body) if hits(t for (_, t, _) in body[r[0]: r[1] + 1] if t)]
        for first, last in ranges:
            if any(first <= a and b <= last and (a, b) != (first, last) for a, b in ranges):
                continue
            found = True
            instr = [t for (_, t, _) in body[first: last + 1] if t is not None]
            n = hits(instr)
            ops = collections.Counter(opcode(t, ptx) for t in instr)
            per_pair = f", {len(instr) / args.pairs:.3f} a pair over {args.pairs} pairs" if args.pairs else ""
            top = ", ".join(f"{k} {v}" for k, v in ops.most_common(8))
            print(f"{name[:90]}\n  loop of {len(instr)} instructions, {n} x {needle}: "
                  f"{len(instr) / n:.1f} per interaction{per_pair} ({top})")
            if args.counts:
                for op, c in ops.most_common():
                    print(f"    {c:6d}  {op}")
    if not found:
        sys.exit(f"no innermost loop holding {needle} in a kernel matching {args.kernel}")


if __name__ == "__main__":
    main()
