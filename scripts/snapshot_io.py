"""Minimal readers of octwalk's outputs for the plotting scripts (numpy only).

TIPSY (both byte orders, detected from ndim as octwalk's reader does), GADGET-2 format 1 and 2
(positions, velocities as stored, masses from the mass table or the MASS block), and GADGET-style HDF5
through h5py when it is installed; each also gives the GADGET type of every body (TIPSY: gas 0,
dark 1, star 4).
"""
import struct
import sys

import numpy as np


def read_tipsy(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 28:
        raise ValueError(f"{path}: {len(data)} bytes is too short for a TIPSY header")
    for order in (">", "<"):
        t, n, ndim, nsph, ndark, nstar = struct.unpack(order + "diiiii", data[:28])
        if 1 <= ndim <= 3:
            break
    else:
        raise ValueError(f"{path}: field ndim at byte offset 12 is not 1..3 in either byte order: not TIPSY")
    header = 32 if len(data) >= 32 + 48 * nsph + 36 * ndark + 44 * nstar else 28
    pos, vel, mass, types = [], [], [], []
    offset = header
    # gas, dark and star records read as GADGET types 0, 1 and 4, as octwalk reads them
    for count, nfloat, kind in ((nsph, 12, 0), (ndark, 9, 1), (nstar, 11, 4)):
        if count:
            rec = np.frombuffer(data, dtype=order + "f4", count=count * nfloat, offset=offset).reshape(count, nfloat)
            mass.append(rec[:, 0])
            pos.append(rec[:, 1:4])
            vel.append(rec[:, 4:7])
            types.append(np.full(count, kind, dtype=np.uint8))
            offset += 4 * nfloat * count
    return (t, np.concatenate(pos).astype(float), np.concatenate(vel).astype(float),
            np.concatenate(mass).astype(float), np.concatenate(types))


def read_gadget2(path):
    """GADGET-2 format 1 or 2 (a 16-byte label record before each block), either byte order,
    float32 or float64 blocks (told apart by the record size). Velocities as stored (u)."""
    with open(path, "rb") as f:
        data = f.read()
    for order in ("<", ">"):
        first = struct.unpack(order + "i", data[:4])[0]
        if first in (256, 8):
            break
    else:
        raise ValueError(f"{path}: first record marker at byte offset 0 is not 256 or 8: not GADGET-2")
    format2 = first == 8
    offset = 0

    def record():
        nonlocal offset
        if format2:
            offset += 16  # label record: int 8, char[4] name, int size, int 8
        size = struct.unpack(order + "i", data[offset:offset + 4])[0]
        start = offset + 4
        offset += size + 8
        return start, size

    start, _ = record()
    head = data[start:start + 256]
    npart = np.array(struct.unpack(order + "6i", head[:24]))
    masstab = np.array(struct.unpack(order + "6d", head[24:72]))
    t = struct.unpack(order + "d", head[72:80])[0]
    n = int(npart.sum())

    def reals(count):
        start, size = record()
        width = "f8" if size == 8 * count else "f4"
        return np.frombuffer(data, dtype=order + width, count=count, offset=start).astype(float)

    pos = reals(3 * n)
    vel = reals(3 * n)
    record()  # ids
    need = int(sum(npart[k] for k in range(6) if masstab[k] == 0 and npart[k] > 0))
    varmass = reals(need) if need else np.empty(0)
    mass, k = [], 0
    for t_ in range(6):
        if npart[t_] == 0:
            continue
        if masstab[t_] == 0:
            mass.append(varmass[k:k + npart[t_]])
            k += npart[t_]
        else:
            mass.append(np.full(npart[t_], masstab[t_]))
    types = np.repeat(np.arange(6, dtype=np.uint8), npart)
    return t, pos.reshape(n, 3), vel.reshape(n, 3), np.concatenate(mass), types


def read_hdf5(path):
    import h5py  # optional dependency
    with h5py.File(path, "r") as f:
        t = float(f["Header"].attrs["Time"])
        pos, vel, mass, types = [], [], [], []
        for k in range(6):
            g = f.get(f"PartType{k}")
            if g is None:
                continue
            pos.append(g["Coordinates"][:])
            vel.append(g["Velocities"][:])
            mass.append(g["Masses"][:] if "Masses" in g else
                        np.full(len(g["Coordinates"]), f["Header"].attrs["MassTable"][k]))
            types.append(np.full(len(g["Coordinates"]), k, dtype=np.uint8))
    return t, np.concatenate(pos), np.concatenate(vel), np.concatenate(mass), np.concatenate(types)


def read_snapshot_typed(path):
    """(time, pos, vel, mass, type) of any octwalk snapshot; type is the GADGET type 0..5 of each body."""
    with open(path, "rb") as f:
        magic = f.read(8)
    if magic == b"\x89HDF\r\n\x1a\n":
        return read_hdf5(path)
    if magic[:4] in (struct.pack("<i", 256), struct.pack(">i", 256)) or \
            (magic[:4] in (struct.pack("<i", 8), struct.pack(">i", 8)) and magic[4:8] == b"HEAD"):
        return read_gadget2(path)
    return read_tipsy(path)


def read_snapshot(path):
    """(time, pos, vel, mass) of any octwalk snapshot."""
    return read_snapshot_typed(path)[:4]


def die(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(1)
