#pragma once
/// @file snapshot.h
/// Reading and writing particle snapshots in TIPSY, GADGET-2 (format 1) and GADGET-style HDF5,
/// the layouts of /work/shared/FORMATS.md. Values are stored as they are held: octwalk works in
/// N-body units (G = SnapshotMeta::gravitationalConstant, 1 by default), so positions, velocities,
/// masses and time are written without conversion, and read back the same way.
///
/// Every writer writes the particles in id order (never tree order) as dark matter, through an
/// AtomicFile (host/io/atomic_file.h: a unique temporary beside path, renamed into place), so a
/// crash never leaves a half-written snapshot under the final name. Every reader checks each count
/// against the file size before it allocates and throws FormatError naming the file, the field and
/// the byte offset of the first mismatch.

#include <string>

#include "host/core/particles.h"

namespace octwalk {

enum class SnapshotFormat
{
    /// TIPSY in big-endian (XDR) byte order, as ChaNGa and pynbody write it. Fields are float32;
    /// ids are NOT stored (a reader numbers the particles 0..N-1 in file order, i.e. in id order).
    TipsyStandard,
    /// TIPSY in little-endian byte order (old PKDGRAV); float32, ids not stored, as TipsyStandard.
    TipsyNative,
    /// Bonsai's TIPSY: little-endian, header pad = version 2, and the uint64 particle id in the
    /// 8 bytes of eps + phi of each dark and star record, so ids survive.
    TipsyBonsai,
    /// GADGET-2 binary format 1 (Fortran records, little-endian when written): float32 positions,
    /// velocities and masses, uint32 ids (uint64 when an id is >= 2^32), all particles type 1.
    Gadget2,
    /// GADGET-style HDF5 (/Header, /PartType1): float64 positions, velocities and masses, uint64 ids.
    Hdf5,
};

/// "tipsy", "tipsy-native", "tipsy-bonsai", "gadget2", "hdf5"; ParameterError for anything else.
SnapshotFormat parseSnapshotFormat(const std::string& name);
/// The name parseSnapshotFormat accepts.
std::string toString(SnapshotFormat format);
/// The file name extension a run gives snapshots of this format: ".tipsy" (all three TIPSY
/// variants), ".gadget" or ".hdf5".
std::string snapshotExtension(SnapshotFormat format);

/// The format of an existing file, by content: the HDF5 signature, a GADGET-2 first record marker
/// of 256 (either byte order), or a TIPSY header whose ndim is 1..3 (either byte order; a
/// little-endian header with pad == 2 is TipsyBonsai). FormatError when nothing matches or the
/// file cannot be read.
SnapshotFormat detectFormat(const std::string& path);

/// What a snapshot records besides the particles, where the format has room for it (HDF5 only:
/// TIPSY and GADGET-2 have no place for it, so a run writes run.json beside them).
struct SnapshotMeta
{
    /// The run parameters as one JSON object (see toJson(Parameters)); HDF5 /Parameters.
    std::string parametersJson;
    /// Program version and git hash; HDF5 /Parameters.
    std::string version;
    /// G in the units of the stored positions, velocities and masses. > 0. HDF5 /Parameters and
    /// /Units (which state the unit system in which G has this value; see snapshot_hdf5.cpp).
    double gravitationalConstant = 1.0;
};

/// Writes `particles` to `path` in `format`, sorted by id, through an AtomicFile.
/// @param[in] path       destination; FormatError if it exists and overwrite is false
/// @param[in] format     layout to write
/// @param[in] particles  positions, velocities, masses (all finite, ids unique: InputError otherwise)
/// @param[in] meta       run parameters and units (HDF5 only)
/// @param[in] overwrite  replace an existing file at `path`
/// FormatError also when the format cannot hold the set (TIPSY: N > 2^31 - 1, float32 overflow).
void writeSnapshot(const std::string& path, SnapshotFormat format, const ParticleSet& particles,
                   const SnapshotMeta& meta = {}, bool overwrite = false);

/// Reads every particle of the file (all TIPSY record kinds, all GADGET types 0..5), in file order.
/// The three TIPSY formats read alike (byte order from ndim; ids from eps + phi when the header
/// says Bonsai version 2); asking for TipsyBonsai from a file that is not version 2 is a FormatError.
/// FormatError for a damaged file, non-finite positions, velocities or masses, or duplicate ids.
ParticleSet readSnapshot(const std::string& path, SnapshotFormat format);
/// As above, with the format from detectFormat(path).
ParticleSet readSnapshot(const std::string& path);

} // namespace octwalk
