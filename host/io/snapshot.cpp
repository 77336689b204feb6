/// @file snapshot.cpp
/// The format-neutral entry points of snapshot.h: names, detection and dispatch to the one file of
/// each format (snapshot_tipsy.cpp, snapshot_gadget.cpp, snapshot_hdf5.cpp or snapshot_hdf5_none.cpp).

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <string>

#include "common/errors.h"
#include "host/io/atomic_file.h"
#include "host/io/binary_io.h"
#include "host/io/snapshot.h"

namespace octwalk {

SnapshotFormat parseSnapshotFormat(const std::string& name)
{
    for (SnapshotFormat f : {SnapshotFormat::TipsyStandard, SnapshotFormat::TipsyNative, SnapshotFormat::TipsyBonsai,
                             SnapshotFormat::Gadget2, SnapshotFormat::Gadget2Format2, SnapshotFormat::Hdf5})
    {
        if (name == toString(f)) return f;
    }
    throw ParameterError("snapshot format '" + name +
                         "' is invalid: must be 'tipsy', 'tipsy-native', 'tipsy-bonsai', 'gadget2', "
                         "'gadget2-format2' or 'hdf5'");
}

CosmologyReading parseCosmologyReading(const std::string& name)
{
    if (name == "auto") return CosmologyReading::Auto;
    if (name == "cosmological") return CosmologyReading::Cosmological;
    if (name == "isolated") return CosmologyReading::Isolated;
    throw ParameterError("cosmology reading '" + name + "' is invalid: must be 'auto', 'cosmological' or 'isolated'");
}

std::string snapshotExtension(SnapshotFormat format)
{
    switch (format)
    {
    case SnapshotFormat::Gadget2:
    case SnapshotFormat::Gadget2Format2: return ".gadget";
    case SnapshotFormat::Hdf5: return ".hdf5";
    default: return ".tipsy";
    }
}

std::string toString(SnapshotFormat format)
{
    switch (format)
    {
    case SnapshotFormat::TipsyStandard: return "tipsy";
    case SnapshotFormat::TipsyNative: return "tipsy-native";
    case SnapshotFormat::TipsyBonsai: return "tipsy-bonsai";
    case SnapshotFormat::Gadget2: return "gadget2";
    case SnapshotFormat::Gadget2Format2: return "gadget2-format2";
    case SnapshotFormat::Hdf5: return "hdf5";
    }
    return "unknown";
}

SnapshotFormat detectFormat(const std::string& path)
{
    io::FileReader in(path);
    if (io::hasHdf5Signature(in)) return SnapshotFormat::Hdf5;
    if (io::looksLikeGadget2(in)) return SnapshotFormat::Gadget2;
    if (io::looksLikeGadget2Format2(in)) return SnapshotFormat::Gadget2Format2;
    SnapshotFormat tipsy;
    if (io::detectTipsy(in, tipsy)) return tipsy;
    io::failAt(path, "header", 0,
               "not HDF5 (no signature), GADGET-2 (first record marker is not 256, nor an 8-byte \"HEAD\" label) or "
               "TIPSY (ndim is not 1..3); "
               "file size " +
                   std::to_string(in.size()));
}

void writeSnapshot(const std::string& path, SnapshotFormat format, const ParticleSet& particles,
                   const SnapshotMeta& meta, bool overwrite)
{
    if (!(meta.gravitationalConstant > 0.0 && std::isfinite(meta.gravitationalConstant)))
    {
        throw ParameterError("snapshot gravitationalConstant = " + std::to_string(meta.gravitationalConstant) +
                             " is invalid: must be finite and > 0");
    }
    const ParticleSet sorted = io::sortedForWriting(particles);
    const Existing existing  = overwrite ? Existing::Replace : Existing::Refuse;
    if (format == SnapshotFormat::Hdf5)
    {
        // HDF5 never writes to the disk itself (snapshot_hdf5.cpp says why): its bytes go through the writer.
        AtomicFile out(path, existing);
        io::writeHdf5(path, sorted, meta, [&](const void* bytes, size_t size) { out.write(bytes, size); });
        out.commit();
        return;
    }
    writeFileAtomically(path, existing, [&](const std::string& temporary) {
        switch (format)
        {
        case SnapshotFormat::TipsyStandard:
        case SnapshotFormat::TipsyNative:
        case SnapshotFormat::TipsyBonsai: io::writeTipsy(temporary, path, sorted, format); break;
        case SnapshotFormat::Gadget2: io::writeGadget2(temporary, path, sorted, false); break;
        case SnapshotFormat::Gadget2Format2: io::writeGadget2(temporary, path, sorted, true); break;
        case SnapshotFormat::Hdf5: break; // above
        }
    });
}

std::array<uint64_t, 6> typeCounts(const ParticleSet& particles)
{
    std::array<uint64_t, 6> counts{};
    for (int64_t i = 0; i < particles.size(); ++i) ++counts[std::min<size_t>(particles.type[size_t(i)], 5)];
    return counts;
}

void writeSnapshotPart(const std::string& path, SnapshotFormat format, const ParticleSet& particles, int32_t numFiles,
                       const std::array<uint64_t, 6>& totals, bool overwrite)
{
    if (format != SnapshotFormat::Gadget2 && format != SnapshotFormat::Gadget2Format2)
    {
        throw ParameterError("snapshot '" + path +
                             "': a snapshot split over files is GADGET-2's (gadget2 or "
                             "gadget2-format2), not " +
                             toString(format));
    }
    if (numFiles < 1) throw ParameterError("snapshot files = " + std::to_string(numFiles) + " must be >= 1");
    const ParticleSet sorted = io::sortedForWriting(particles);
    const io::GadgetSplit split{numFiles, totals};
    writeFileAtomically(path, overwrite ? Existing::Replace : Existing::Refuse, [&](const std::string& temporary) {
        io::writeGadget2(temporary, path, sorted, format == SnapshotFormat::Gadget2Format2, split);
    });
}

void writeSnapshotSplit(const std::string& base, SnapshotFormat format, const ParticleSet& particles, int32_t numFiles,
                        bool overwrite)
{
    if (numFiles < 1) throw ParameterError("snapshot files = " + std::to_string(numFiles) + " must be >= 1");
    const ParticleSet sorted             = io::sortedForWriting(particles);
    const std::array<uint64_t, 6> totals = typeCounts(sorted);
    const int64_t n                      = sorted.size();
    for (int32_t k = 0; k < numFiles; ++k)
    {
        const int64_t first = n * k / numFiles, last = n * (k + 1) / numFiles;
        ParticleSet part;
        part.time      = sorted.time;
        part.boxSize   = sorted.boxSize;
        part.cosmology = sorted.cosmology;
        part.pos.assign(sorted.pos.begin() + first, sorted.pos.begin() + last);
        part.vel.assign(sorted.vel.begin() + first, sorted.vel.begin() + last);
        part.mass.assign(sorted.mass.begin() + first, sorted.mass.begin() + last);
        part.id.assign(sorted.id.begin() + first, sorted.id.begin() + last);
        part.type.assign(sorted.type.begin() + first, sorted.type.begin() + last);
        writeSnapshotPart(base + "." + std::to_string(k), format, part, numFiles, totals, overwrite);
    }
}

namespace {

/// A GADGET multi-file snapshot may be named by its base: snap_005 for snap_005.0 ... snap_005.(N - 1).
std::string firstFileOf(const std::string& path)
{
    std::error_code ec;
    if (!std::filesystem::exists(path, ec) && std::filesystem::exists(path + ".0", ec)) return path + ".0";
    return path;
}

} // namespace

ParticleSet readSnapshot(const std::string& named, SnapshotFormat format, const SnapshotReadOptions& options)
{
    const std::string path = firstFileOf(named);
    ParticleSet p;
    switch (format)
    {
    case SnapshotFormat::TipsyStandard:
    case SnapshotFormat::TipsyNative:
    case SnapshotFormat::TipsyBonsai: p = io::readTipsy(path, format); break;
    case SnapshotFormat::Gadget2:
    case SnapshotFormat::Gadget2Format2: p = io::readGadget2(path, options); break;
    case SnapshotFormat::Hdf5: p = io::readHdf5(path, options); break;
    }
    io::checkUniqueIds(p, path);
    io::checkInsideBox(p, path);
    // Every reader refuses what a run would refuse anyway, so that convert cannot pass it on.
    for (int64_t i = 0; i < p.size(); ++i)
    {
        if (p.mass[i] < 0)
        {
            throw FormatError("'" + path + "': particle " + std::to_string(i) + " (id " + std::to_string(p.id[i]) +
                              ") has mass = " + std::to_string(p.mass[i]) + ", negative");
        }
    }
    return p;
}

void snapshotNotice(const SnapshotReadOptions& options, const std::string& text)
{
    if (options.notice) options.notice(text);
    else std::cerr << "octwalk: note: " << text << "\n";
}

ParticleSet readSnapshot(const std::string& path, SnapshotFormat format)
{
    return readSnapshot(path, format, SnapshotReadOptions{});
}

ParticleSet readSnapshot(const std::string& path, const SnapshotReadOptions& options)
{
    return readSnapshot(path, detectFormat(firstFileOf(path)), options);
}

} // namespace octwalk
