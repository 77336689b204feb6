#!/usr/bin/env bash
# Regenerates the fuzz seed corpora in tests/fuzz/corpus/<target>/ (committed; a few KB per target).
#   bash dev/make_fuzz_corpus.sh [path/to/octwalk]     (default: build/octwalk)
# Canonical files come from `octwalk ic` (so they follow the writers); the variants the writers never
# produce (old 28-byte TIPSY header, gas and star records, big-endian GADGET-2 with several types,
# float64 blocks and uint64 ids, empty sets) are written byte by byte by python3. The command-line
# seeds are argv lines in the sandbox rules of tests/fuzz/cli_harness.h.
set -euo pipefail
cd "$(dirname "$0")/.."
octwalk=$(realpath "${1:-build/octwalk}")
[ -x "$octwalk" ] || { echo "no octwalk binary at $octwalk (build it first, or pass its path)" >&2; exit 1; }
corpus=tests/fuzz/corpus
rm -rf "$corpus"
mkdir -p "$corpus"/{tipsy,gadget2,hdf5,cli}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

ic() { # model n format output
  "$octwalk" ic "$1" --n "$2" --seed 3 --format "$3" -o "$work/$4" >/dev/null
  cp "$work/$4" "$corpus/$5/$4"
}
ic plummer 4 tipsy standard-4 tipsy
ic plummer 3 tipsy-native native-3 tipsy
ic galaxy 6 tipsy-bonsai bonsai-6 tipsy
ic plummer 4 gadget2 table-mass-4 gadget2
ic galaxy 6 gadget2 mass-block-6 gadget2
ic plummer 3 hdf5 plummer-3 hdf5 # 6 KB: HDF5's own structure; one seed is enough

python3 - "$corpus" <<'EOF'
import struct, sys
corpus = sys.argv[1]

def write(path, data):
    with open(f"{corpus}/{path}", "wb") as f:
        f.write(data)

# TIPSY: old 28-byte header (no pad), little-endian, one gas, one dark and one star record.
def tipsy(order, gas, dark, star, pad=True, time=0.5):
    e = "<" if order == "little" else ">"
    h = struct.pack(e + "diiiii", time, gas + dark + star, 3, gas, dark, star)
    if pad:
        h += struct.pack(e + "i", 0)
    body = b""
    for i in range(gas):   # mass, pos, vel, rho, temp, hsmooth, metals, phi
        body += struct.pack(e + "12f", 0.1, i, 0.5, -0.5, 0, 0.1, 0, 1, 1, 0.01, 0, -1)
    for i in range(dark):  # mass, pos, vel, eps, phi
        body += struct.pack(e + "9f", 0.2, -i, 1, 0.25, 0.1, 0, 0, 0.01, -1)
    for i in range(star):  # mass, pos, vel, metals, tform, eps, phi
        body += struct.pack(e + "11f", 0.3, 2, i, 0, 0, 0, 0.1, 0.02, 0, 0.01, -1)
    return h + body
write("tipsy/old-header-mixed", tipsy("little", 1, 1, 1, pad=False))
write("tipsy/big-endian-gas-star", tipsy("big", 2, 0, 1))
write("tipsy/empty", tipsy("big", 0, 0, 0, time=0.0))

# GADGET-2 format 1: HEAD of 256 bytes, then POS, VEL, ID, MASS (for types with MassTable 0).
def gadget(order, npart, masstable, wide=False, double=False):
    e = "<" if order == "little" else ">"
    n = sum(npart)
    head = struct.pack(e + "6i", *npart) + struct.pack(e + "6d", *masstable)
    head += struct.pack(e + "dd", 0.25, 0.0)                  # time, redshift
    head += struct.pack(e + "ii", 0, 0)                       # flag_sfr, flag_feedback
    head += struct.pack(e + "6I", *npart)                     # npartTotal
    head += struct.pack(e + "ii", 0, 1)                       # flag_cooling, num_files
    head += struct.pack(e + "4d", 0, 0, 0, 1)                 # box, omega0, omegaLambda, h
    head += struct.pack(e + "ii", 0, 0)                       # flag_stellarage, flag_metals
    head += struct.pack(e + "6I", *([0] * 6))                 # npartTotalHighWord
    head = head.ljust(256, b"\0")
    real = "d" if double else "f"
    def record(payload):
        return struct.pack(e + "I", len(payload)) + payload + struct.pack(e + "I", len(payload))
    out = record(head)
    if n:
        out += record(struct.pack(e + f"{3 * n}{real}", *[0.1 * k for k in range(3 * n)]))
        out += record(struct.pack(e + f"{3 * n}{real}", *[-0.01 * k for k in range(3 * n)]))
        out += record(struct.pack(e + f"{n}{'Q' if wide else 'I'}", *[(1 << 33) * wide + k for k in range(n)]))
        nmass = sum(c for c, m in zip(npart, masstable) if m == 0)
        if nmass:
            out += record(struct.pack(e + f"{nmass}{real}", *[0.5 + k for k in range(nmass)]))
    return out
write("gadget2/big-endian-mixed-types", gadget("big", [1, 2, 0, 0, 1, 0], [0, 0.25, 0, 0, 0, 0]))
write("gadget2/double-wide-ids", gadget("little", [0, 3, 0, 0, 0, 0], [0] * 6, wide=True, double=True))
write("gadget2/empty", gadget("little", [0] * 6, [0] * 6))

cli = {
    "forces": "forces 8 --theta 0.7 --sample 4 --backend cpu",
    "forces-json": "forces 2 --epsilon 0.1 --mac octgrav --monopole --n-leaf 1 --n-group 1 -o f.json",
    "run-hdf5": "run 8 --format hdf5 --snapshot-every 1 --energy-every 2 --direct --output-dir r",
    "run-input": "run 4 --input a.tipsy --output-dir out --zero-net-force --checkpoint-every 1",
    "run-gadget": "run --input b.gadget --input-format gadget2 --format tipsy-bonsai --epsilon 0",
    "ic-galaxy": "ic 8 galaxy -o g.tipsy --format tipsy-native",
    "ic-merger": "ic 12 merger --mass-ratio 0.5 --pericentre 1 --inclination 30 -o m.gadget --format gadget2",
    "convert-hdf5": "convert a.tipsy x.hdf5 --format hdf5",
    "convert-auto": "convert c.hdf5 y.gadget --format gadget2 --input-format hdf5",
    "accuracy": "accuracy 32 --theta 0.3,0.6 --mac bonsai,octgrav --csv a.csv --json a.json --errors-dir e",
    "profile": "profile 16 --theta 0.5 --direct-sample 8 --csv p.csv --json p.json",
    "help": "--help",
    "forces-help": "forces --help",
    "version": "--version",
    "unknown": "-x",
}
for name, line in cli.items():
    write(f"cli/{name}", line.encode() + b"\n")
EOF
du -sh "$corpus"/*
