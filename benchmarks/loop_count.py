#!/usr/bin/env python3
"""Instructions per interaction in the inner loops of the force kernels.

Reads `cuobjdump -sass` (SASS) or `nvcc -ptx` (PTX) text on stdin. In each kernel whose name
contains the filter, every loop (a backward branch and the instructions from its target up to it)
that holds reciprocal square roots (MUFU.RSQ / rsqrt.approx) and no such loop inside it is an
interaction loop (the unrolled loop over a staged tile, and its remainder loop): every
interaction takes exactly one, so instructions / rsqrts is the cost per interaction, loads, the
loop test and the branch included. Prints one line per such loop.

Usage: cuobjdump -sass forces_gpu.cu.o | python3 benchmarks/loop_count.py [kernel-name-filter]
       nvcc -ptx ... -o forces.ptx && python3 benchmarks/loop_count.py bodyNode < forces.ptx
"""
import re
import sys
from collections import Counter

SASS_FUNC = re.compile(r"^\s*Function : (\S+)")
SASS_INSTR = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?);")
SASS_BRA = re.compile(r"\bBRA\b.*?(?:0x([0-9a-f]+)|`?\(?(\.L_x_\d+)\)?`?)")
SASS_LABEL = re.compile(r"^\s*(\.L_x_\d+):")
PTX_FUNC = re.compile(r"^(?:\.visible\s+|\.weak\s+)?\.entry\s+(\S+?)\(")
PTX_LABEL = re.compile(r"^(\$L__\w+):")
PTX_BRA = re.compile(r"\bbra(?:\.uni)?\s+(\$L__\w+);")


def opcode(text):
    """The mnemonic of an instruction, without predicate and modifiers."""
    words = text.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else ""


def parse(lines):
    """Kernels as lists of (label or None, instruction text, branch target or None)."""
    kernels, name, body = {}, None, []
    ptx = any(l.startswith(".version") for l in lines[:50])
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
            lab = PTX_LABEL.match(line.strip())
            if lab:
                body.append((lab.group(1), None, None))
                continue
            text = line.strip()
            if not text or text.startswith(("//", ".", "{", "}", ")")) or text.endswith("{"):
                continue
            b = PTX_BRA.search(text)
            body.append((None, text.rstrip(";"), b.group(1) if b else None))
        else:
            lab = SASS_LABEL.match(line)
            if lab:
                body.append((lab.group(1), None, None))
                continue
            m = SASS_INSTR.match(line)
            if not m:
                continue
            addr, text = m.group(1), m.group(2)
            body.append((int(addr, 16), text, None))
            b = SASS_BRA.search(text)
            if b:
                target = int(b.group(1), 16) if b.group(1) else b.group(2)
                body[-1] = (int(addr, 16), text, target)
    if name:
        kernels[name] = body
    return kernels, ptx


def loops(body, ptx):
    """(first, last) indices of every backward branch's range."""
    where = {}
    for i, (label, _, _) in enumerate(body):
        if label is not None:
            where.setdefault(label, i)
    found = []
    for i, (_, text, target) in enumerate(body):
        if text is None or target is None or target not in where:
            continue
        if where[target] < i:
            found.append((where[target], i))
    return found


def main():
    filt = sys.argv[1] if len(sys.argv) > 1 else "Kernel"
    kernels, ptx = parse(sys.stdin.read().splitlines())
    rsqrt = "rsqrt" if ptx else "MUFU"
    def rsqrts(instr):
        return sum(1 for t in instr if opcode(t) == rsqrt and ("RSQ" in t or ptx))

    for name, body in kernels.items():
        if filt not in name:
            continue
        ranges = [r for r in loops(body, ptx) if rsqrts(t for (_, t, _) in body[r[0] : r[1] + 1] if t)]
        for first, last in ranges:
            if any(first <= a and b <= last and (a, b) != (first, last) for a, b in ranges):
                continue
            instr = [t for (_, t, _) in body[first : last + 1] if t is not None]
            n_rsqrt = rsqrts(instr)
            ops = Counter(opcode(t) for t in instr)
            top = ", ".join(f"{k} {v}" for k, v in ops.most_common(8))
            print(f"{name[:90]}\n  loop of {len(instr)} instructions, {n_rsqrt} interactions: "
                  f"{len(instr) / n_rsqrt:.1f} per interaction ({top})")


if __name__ == "__main__":
    main()
