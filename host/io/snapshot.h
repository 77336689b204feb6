#pragma once
/// @file snapshot.h
/// Reading and writing particle snapshots in TIPSY, GADGET-2 (format 1 and 2) and GADGET-style HDF5,
/// the layouts of /work/shared/FORMATS.md. Values are stored as they are held: octwalk works in
/// N-body units (G = SnapshotMeta::gravitationalConstant, 1 by default), so positions, masses and time
/// are written without conversion, and read back the same way.
///
/// Particle types (ParticleSet::type, GADGET's 0..5) survive every format: GADGET-2 writes the bodies
/// ordered by type with npart[] and a per-type MassTable, HDF5 one /PartTypeN group per type, and TIPSY
/// type 0 as gas records, type 4 as star records and every other type as dark records (TIPSY has only
/// those three kinds: types 2, 3 and 5 read back as 1). Within a type (a TIPSY record kind), bodies
/// are written in id order, never tree order.
///
/// Cosmological sets (ParticleSet::cosmology set: time is the scale factor a, positions comoving in
/// [0, boxSize)) are written to GADGET-2 and HDF5 with the cosmological header (Time = a,
/// Redshift = 1/a - 1, BoxSize, Omega0, OmegaLambda, HubbleParam) and GADGET's velocity convention:
/// the file holds u = v_pec / sqrt(a), the set holds v_pec. GADGET marks no file as cosmological, so
/// a reader treats a file as cosmological when its BoxSize > 0 and Omega0 > 0 (what N-GenIC, MUSIC and
/// monofonIC write); SnapshotReadOptions::cosmology forces either reading. TIPSY stores neither box nor
/// cosmology: its time is a, its velocities are written as held (v_pec).
///
/// Every writer writes through an AtomicFile (host/io/atomic_file.h: a unique temporary beside path,
/// renamed into place), so a crash never leaves a half-written snapshot under the final name. Every
/// reader checks each count against the file size before it allocates and throws FormatError naming
/// the file, the field and the byte offset of the first mismatch.

#include <functional>
#include <string>

#include "host/core/particles.h"

namespace octwalk {

enum class SnapshotFormat
{
    /// TIPSY in big-endian (XDR) byte order, as ChaNGa and pynbody write it. Fields are float32;
    /// ids are NOT stored (a reader numbers the particles 0..N-1 in file order: gas, dark, star
    /// records, each in id order).
    TipsyStandard,
    /// TIPSY in little-endian byte order (old PKDGRAV); float32, ids not stored, as TipsyStandard.
    TipsyNative,
    /// Bonsai's TIPSY: little-endian, header pad = version 2, and the uint64 particle id in the
    /// 8 bytes of eps + phi of each dark and star record, so ids survive. Gas records have no room
    /// for one: a reader numbers gas bodies after the largest dark or star id.
    TipsyBonsai,
    /// GADGET-2 binary format 1 (Fortran records, little-endian when written): float32 positions,
    /// velocities and masses, uint32 ids (uint64 when an id is >= 2^32), bodies ordered by type, a
    /// MassTable entry for each type whose bodies share one float32 mass (no MASS entries for it), a
    /// U block of zeros when there is gas (GADGET-2 reads one from initial conditions).
    Gadget2,
    /// GADGET-style HDF5 (/Header, /PartTypeN): float64 positions, velocities and masses, uint64 ids.
    Hdf5,
    /// GADGET-2 binary format 2: format 1 with a 16-byte label record before each block
    /// (int 8, char[4] name, int blocksize + 8, int 8). Reading as Gadget2 or Gadget2Format2 reads both.
    Gadget2Format2,
};

/// "tipsy", "tipsy-native", "tipsy-bonsai", "gadget2", "gadget2-format2", "hdf5"; ParameterError
/// for anything else.
SnapshotFormat parseSnapshotFormat(const std::string& name);
/// The name parseSnapshotFormat accepts.
std::string toString(SnapshotFormat format);
/// The file name extension a run gives snapshots of this format: ".tipsy" (all three TIPSY
/// variants), ".gadget" (both GADGET-2 formats) or ".hdf5".
std::string snapshotExtension(SnapshotFormat format);

/// The format of an existing file, by content: the HDF5 signature, a GADGET-2 first record marker
/// of 256 (format 1) or a first record of 8 bytes holding the label "HEAD" (format 2; either byte
/// order), or a TIPSY header whose ndim is 1..3 (either byte order; a
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

/// Writes `particles` to `path` in `format`, by type and within a type by id, through an AtomicFile.
/// @param[in] path       destination; FormatError if it exists and overwrite is false
/// @param[in] format     layout to write
/// @param[in] particles  positions, velocities, masses (all finite, ids unique, types 0..5, positions
///                       in [0, boxSize) when boxSize > 0, time = a > 0 with a cosmology: InputError
///                       otherwise)
/// @param[in] meta       run parameters and units (HDF5 only)
/// @param[in] overwrite  replace an existing file at `path`
/// FormatError also when the format cannot hold the set (TIPSY: N > 2^31 - 1, float32 overflow; GADGET:
/// a cosmological set without a box or with Omega0 = 0, which a reader could not tell from an
/// isolated one). A float32 format rounds a coordinate that float32 would round up to boxSize down to
/// the largest float32 below it, so the file stays inside its box.
void writeSnapshot(const std::string& path, SnapshotFormat format, const ParticleSet& particles,
                   const SnapshotMeta& meta = {}, bool overwrite = false);

/// The count of each GADGET particle type (0..5) in particles.
std::array<uint64_t, 6> typeCounts(const ParticleSet& particles);

/// One part of a GADGET-2 snapshot split over numFiles files (NumFilesPerSnapshot), as GADGET writes large ones
/// and as the readers here read them (BASE.0 ... BASE.(numFiles - 1)): particles are this part's, totals the
/// whole snapshot's count of each type. Written as writeSnapshot writes a file. ParameterError for a format
/// other than gadget2 or gadget2-format2, or numFiles < 1.
void writeSnapshotPart(const std::string& path, SnapshotFormat format, const ParticleSet& particles, int32_t numFiles,
                       const std::array<uint64_t, 6>& totals, bool overwrite = false);

/// The set in id order split over numFiles GADGET-2 files base.0 ... base.(numFiles - 1) of near-equal counts.
void writeSnapshotSplit(const std::string& base, SnapshotFormat format, const ParticleSet& particles, int32_t numFiles,
                        bool overwrite = false);

/// How a reader decides whether a GADGET-2 or HDF5 file is cosmological (see the file comment).
enum class CosmologyReading
{
    /// Cosmological when the header has BoxSize > 0 and Omega0 > 0.
    Auto,
    /// Cosmological whatever the header says (its Omega0, OmegaLambda, HubbleParam must be valid).
    Cosmological,
    /// Never: Time is plain time, velocities are read as stored; BoxSize is still honoured.
    Isolated,
};

/// "auto", "cosmological", "isolated"; ParameterError for anything else.
CosmologyReading parseCosmologyReading(const std::string& name);

struct SnapshotReadOptions
{
    CosmologyReading cosmology = CosmologyReading::Auto;
    /// Called with a one-line notice (no newline) about something in the file that the reader ignored or
    /// converted, e.g. the uninitialised npartTotalHighWord of a GADGET-4 format-1 header; unset: the
    /// notice goes to std::cerr as "octwalk: note: ...".
    std::function<void(const std::string&)> notice;
};

/// Passes text to options.notice, or to std::cerr as "octwalk: note: TEXT" when it is unset.
void snapshotNotice(const SnapshotReadOptions& options, const std::string& text);

/// Reads every particle of the file (all TIPSY record kinds, all GADGET types 0..5) with its type,
/// in file order; the box size, and for a cosmological file the cosmology, from the header.
/// The three TIPSY formats read alike (byte order from ndim; ids from eps + phi when the header
/// says Bonsai version 2; gas records map to type 0, dark to 1, star to 4); asking for TipsyBonsai
/// from a file that is not version 2 is a FormatError. Both GADGET-2 formats read alike.
/// FormatError for a damaged file, non-finite positions, velocities or masses, duplicate ids, a body
/// outside [0, BoxSize) when BoxSize > 0, a non-finite or negative BoxSize, non-finite Omega0,
/// OmegaLambda or HubbleParam, or (cosmological) a <= 0 or a cosmology that validateCosmology refuses.
/// @param[in] path     the file
/// @param[in] format   its layout
/// @param[in] options  how to decide whether the file is cosmological
ParticleSet readSnapshot(const std::string& path, SnapshotFormat format, const SnapshotReadOptions& options);
/// As above with the default options.
ParticleSet readSnapshot(const std::string& path, SnapshotFormat format);
/// As above, with the format from detectFormat(path).
ParticleSet readSnapshot(const std::string& path, const SnapshotReadOptions& options = {});

} // namespace octwalk
