"""Minimal readers of octwalk's outputs for the plotting scripts (numpy only).

TIPSY (both byte orders, detected from ndim as octwalk's reader does), GADGET-2 format 1 (positions,
velocities, masses from the mass table or the MASS block), and GADGET-style HDF5 through h5py when
it is installed.
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
    pos, vel, mass = [], [], []
    offset = header
    for count, nfloat in ((nsph, 12), (ndark, 9), (nstar, 11)):
        if count:
            rec = np.frombuffer(data, dtype=order + "f4", count=count * nfloat, offset=offset).reshape(count, nfloat)
            mass.append(rec[:, 0])
            pos.append(rec[:, 1:4])
            vel.append(rec[:, 4:7])
            offset += 4 * nfloat * count
    return t, np.concatenate(pos).astype(float), np.concatenate(vel).astype(float), np.concatenate(mass).astype(float)


def read_gadget2(path):
    with open(path, "rb") as f:
        data = f.read()
    order = "<" if struct.unpack("<i", data[:4])[0] == 256 else ">"
    if struct.unpack(order + "i", data[:4])[0] != 256:
        raise ValueError(f"{path}: first record marker at byte offset 0 is not 256: not GADGET-2")
    head = data[4:260]
    npart = np.array(struct.unpack(order + "6I", head[:24]))
    masstab = np.array(struct.unpack(order + "6d", head[24:72]))
    t = struct.unpack(order + "d", head[72:80])[0]
    n = int(npart.sum())
    offset = 264

    def block(dtype, count):
        nonlocal offset
        size = struct.unpack(order + "i", data[offset:offset + 4])[0]
        arr = np.frombuffer(data, dtype=order + dtype, count=count, offset=offset + 4)
        offset += size + 8
        return arr, size

    pos, _ = block("f4", 3 * n)
    vel, _ = block("f4", 3 * n)
    size = struct.unpack(order + "i", data[offset:offset + 4])[0]
    block("u8" if size == 8 * n else "u4", n)
    need = int(sum(npart[t_] for t_ in range(6) if masstab[t_] == 0 and npart[t_] > 0))
    varmass = block("f4", need)[0].astype(float) if need else np.empty(0)
    mass, k = [], 0
    for t_ in range(6):
        if npart[t_] == 0:
            continue
        if masstab[t_] == 0:
            mass.append(varmass[k:k + npart[t_]])
            k += npart[t_]
        else:
            mass.append(np.full(npart[t_], masstab[t_]))
    return t, pos.reshape(n, 3).astype(float), vel.reshape(n, 3).astype(float), np.concatenate(mass)


def read_hdf5(path):
    import h5py  # optional dependency
    with h5py.File(path, "r") as f:
        t = float(f["Header"].attrs["Time"])
        pos, vel, mass = [], [], []
        for k in range(6):
            g = f.get(f"PartType{k}")
            if g is None:
                continue
            pos.append(g["Coordinates"][:])
            vel.append(g["Velocities"][:])
            mass.append(g["Masses"][:] if "Masses" in g else
                        np.full(len(g["Coordinates"]), f["Header"].attrs["MassTable"][k]))
    return t, np.concatenate(pos), np.concatenate(vel), np.concatenate(mass)


def read_snapshot(path):
    with open(path, "rb") as f:
        magic = f.read(8)
    if magic == b"\x89HDF\r\n\x1a\n":
        return read_hdf5(path)
    if magic[:4] in (struct.pack("<i", 256), struct.pack(">i", 256)):
        return read_gadget2(path)
    return read_tipsy(path)


def die(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(1)
