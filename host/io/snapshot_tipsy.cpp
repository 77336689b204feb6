/// @file snapshot_tipsy.cpp
/// TIPSY binary snapshots (standard big-endian, native little-endian, Bonsai version 2). Record kinds
/// are particle types: gas, dark and star records read as GADGET types 0, 1 and 4; a writer puts type
/// 0 in gas records, type 4 in star records and every other type in dark records.

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "host/io/binary_io.h"
#include "common/errors.h"
#include "host/io/snapshot.h"

namespace octwalk {

namespace io {

namespace {

constexpr uint64_t tipsyHeaderBytes    = 32;
constexpr uint64_t tipsyOldHeaderBytes = 28; // no pad
constexpr int32_t bonsaiVersion        = 2;
constexpr uint64_t recordsPerChunk     = 4096;

/// The bytes of one record kind, where Bonsai keeps the uint64 id in it (eps + phi; gas records have
/// none), and the GADGET type its bodies read as.
struct RecordLayout
{
    const char* kind;
    uint64_t bytes;
    uint64_t idOffset;
    uint8_t type;
};

constexpr RecordLayout gasLayout{"gas", 48, 0, 0};
constexpr RecordLayout darkLayout{"dark", 36, 28, 1};
constexpr RecordLayout starLayout{"star", 44, 36, 4};

/// The record kind a body of GADGET type t is written as: 0 gas, 4 star, every other type dark (0, 1, 2
/// in the file's record order).
int recordKind(uint8_t t) { return t == 0 ? 0 : t == 4 ? 2 : 1; }

struct TipsyHeader
{
    double time     = 0;
    int32_t nbodies = 0, ndim = 0, nsph = 0, ndark = 0, nstar = 0;
    int32_t pad     = 0; ///< Bonsai's version; 0 for an old 28-byte header, which has none
    ByteOrder order = ByteOrder::Big;
    uint64_t bytes  = tipsyHeaderBytes;

    bool bonsaiIds() const { return order == ByteOrder::Little && bytes == tipsyHeaderBytes && pad == bonsaiVersion; }
};

/// The byte order in which ndim (offset 12) is 1..3, as pynbody and yt decide it.
bool tipsyByteOrder(const unsigned char* header, ByteOrder& order)
{
    for (ByteOrder candidate : {ByteOrder::Big, ByteOrder::Little})
    {
        const int32_t ndim = decode<int32_t>(header + 12, candidate);
        if (ndim >= 1 && ndim <= 3)
        {
            order = candidate;
            return true;
        }
    }
    return false;
}

uint64_t recordBytes(const TipsyHeader& h)
{
    return uint64_t(h.nsph) * gasLayout.bytes + uint64_t(h.ndark) * darkLayout.bytes +
           uint64_t(h.nstar) * starLayout.bytes;
}

void checkCount(const FileReader& in, const char* field, uint64_t offset, int32_t value)
{
    if (value < 0) in.fail(field, offset, std::string(field) + " = " + std::to_string(value) + " is negative");
}

TipsyHeader readTipsyHeader(FileReader& in)
{
    if (in.size() < tipsyOldHeaderBytes)
    {
        in.fail("header", 0,
                "the file has " + std::to_string(in.size()) + " bytes; a TIPSY header needs 28 (old) or 32");
    }
    unsigned char raw[tipsyHeaderBytes] = {};
    in.seek(0);
    in.read(raw, std::min(tipsyHeaderBytes, in.size()), "header");

    TipsyHeader h;
    if (!tipsyByteOrder(raw, h.order))
    {
        in.fail("ndim", 12,
                "ndim = " + std::to_string(decode<int32_t>(raw + 12, ByteOrder::Big)) + " (big-endian) or " +
                    std::to_string(decode<int32_t>(raw + 12, ByteOrder::Little)) +
                    " (little-endian) is not 1..3: not a TIPSY file");
    }
    h.time    = decode<double>(raw, h.order);
    h.nbodies = decode<int32_t>(raw + 8, h.order);
    h.ndim    = decode<int32_t>(raw + 12, h.order);
    h.nsph    = decode<int32_t>(raw + 16, h.order);
    h.ndark   = decode<int32_t>(raw + 20, h.order);
    h.nstar   = decode<int32_t>(raw + 24, h.order);
    h.pad     = decode<int32_t>(raw + 28, h.order);

    checkCount(in, "nbodies", 8, h.nbodies);
    checkCount(in, "nsph", 16, h.nsph);
    checkCount(in, "ndark", 20, h.ndark);
    checkCount(in, "nstar", 24, h.nstar);
    const int64_t sum = int64_t(h.nsph) + h.ndark + h.nstar;
    if (sum != h.nbodies)
    {
        in.fail("nbodies", 8,
                "nbodies = " + std::to_string(h.nbodies) + " but nsph + ndark + nstar = " + std::to_string(sum));
    }
    if (!std::isfinite(h.time)) in.fail("time", 0, "time = " + std::to_string(h.time) + " is not finite");

    // The counts must account for every byte: this is what catches truncation and a damaged count
    // before anything is allocated, and what tells an old 28-byte header from the 32-byte one.
    const uint64_t records = recordBytes(h);
    if (in.size() == tipsyHeaderBytes + records)
    {
        h.bytes = tipsyHeaderBytes;
    }
    else if (in.size() == tipsyOldHeaderBytes + records)
    {
        h.bytes = tipsyOldHeaderBytes;
        h.pad   = 0;
    }
    else
    {
        in.fail("nsph, ndark, nstar", 16,
                "nsph = " + std::to_string(h.nsph) + ", ndark = " + std::to_string(h.ndark) +
                    ", nstar = " + std::to_string(h.nstar) + " (" + toString(h.order) + ") need " +
                    std::to_string(tipsyHeaderBytes + records) + " bytes (" +
                    std::to_string(tipsyOldHeaderBytes + records) + " with an old header), the file has " +
                    std::to_string(in.size()));
    }
    return h;
}

const char* const recordFieldNames[7] = {"mass", "pos.x", "pos.y", "pos.z", "vel.x", "vel.y", "vel.z"};

/// Reads `count` records of one kind into out[next...]; ids are the running index unless the file
/// keeps Bonsai ids. Non-finite mass, position or velocity: FormatError naming the particle.
void readRecords(FileReader& in, const TipsyHeader& h, const RecordLayout& layout, int64_t count, ParticleSet& out,
                 int64_t& next)
{
    const std::string field = std::string(layout.kind) + " records";
    std::vector<unsigned char> buffer;
    for (int64_t first = 0; first < count; first += int64_t(recordsPerChunk))
    {
        const uint64_t chunk   = std::min<uint64_t>(recordsPerChunk, uint64_t(count - first));
        const uint64_t chunkAt = in.offset();
        buffer.resize(chunk * layout.bytes);
        in.read(buffer.data(), buffer.size(), field);
        for (uint64_t r = 0; r < chunk; ++r)
        {
            const unsigned char* record = buffer.data() + r * layout.bytes;
            double f[7];
            for (int j = 0; j < 7; ++j)
            {
                f[j] = decode<float>(record + 4 * j, h.order);
                if (!std::isfinite(f[j]))
                {
                    in.fail(recordFieldNames[j], chunkAt + r * layout.bytes + 4 * j,
                            "particle " + std::to_string(next) + " (" + layout.kind + " record " +
                                std::to_string(first + int64_t(r)) + ") has " + recordFieldNames[j] + " = " +
                                std::to_string(f[j]) + ", not finite");
                }
            }
            out.type[next] = layout.type;
            out.mass[next] = f[0];
            out.pos[next]  = {f[1], f[2], f[3]};
            out.vel[next]  = {f[4], f[5], f[6]};
            out.id[next]   = (h.bonsaiIds() && layout.idOffset != 0)
                                 ? decode<uint64_t>(record + layout.idOffset, ByteOrder::Little)
                                 : uint64_t(next);
            ++next;
        }
    }
}

/// Bonsai keeps no id in gas records; number them after the largest id of the dark and star records.
void numberBonsaiGas(ParticleSet& p, int64_t nsph)
{
    uint64_t largest = 0;
    bool any         = false;
    for (int64_t i = nsph; i < p.size(); ++i)
    {
        largest = std::max(largest, p.id[i]);
        any     = true;
    }
    const uint64_t base = any ? largest + 1 : 0;
    for (int64_t i = 0; i < nsph; ++i) p.id[i] = base + uint64_t(i);
}

} // namespace

bool detectTipsy(FileReader& in, SnapshotFormat& format)
{
    if (in.size() < tipsyOldHeaderBytes) return false;
    unsigned char raw[tipsyHeaderBytes] = {};
    in.seek(0);
    in.read(raw, std::min(tipsyHeaderBytes, in.size()), "header");
    ByteOrder order;
    if (!tipsyByteOrder(raw, order)) return false;
    if (order == ByteOrder::Big)
    {
        format = SnapshotFormat::TipsyStandard;
        return true;
    }
    // Bonsai only when the whole header checks out: the 4 bytes after an old 28-byte header are the
    // first record's mass, not a version. A damaged file is reported by the reader, not here.
    bool bonsai = false;
    try
    {
        bonsai = readTipsyHeader(in).bonsaiIds();
    }
    catch (const FormatError&)
    {
        bonsai = false;
    }
    format = bonsai ? SnapshotFormat::TipsyBonsai : SnapshotFormat::TipsyNative;
    return true;
}

ParticleSet readTipsy(const std::string& path, SnapshotFormat format)
{
    FileReader in(path);
    const TipsyHeader h = readTipsyHeader(in);
    if (format == SnapshotFormat::TipsyBonsai && !h.bonsaiIds())
    {
        in.fail("pad", 28,
                "reading as tipsy-bonsai needs a little-endian 32-byte header with pad (version) = 2; this file is " +
                    std::string(toString(h.order)) + " with a " + std::to_string(h.bytes) +
                    "-byte header and pad = " + std::to_string(h.pad));
    }

    ParticleSet p;
    p.resize(h.nbodies);
    p.time = h.time;
    in.seek(h.bytes);
    int64_t next = 0;
    readRecords(in, h, gasLayout, h.nsph, p, next);
    readRecords(in, h, darkLayout, h.ndark, p, next);
    readRecords(in, h, starLayout, h.nstar, p, next);
    if (h.bonsaiIds()) numberBonsaiGas(p, h.nsph);
    return p;
}

void writeTipsy(const std::string& path, const std::string& name, const ParticleSet& sorted, SnapshotFormat format)
{
    const int64_t n = sorted.size();
    if (n > std::numeric_limits<int32_t>::max())
    {
        throw FormatError("snapshot '" + name + "': " + std::to_string(n) +
                          " particles do not fit in TIPSY's int32 nbodies");
    }
    checkFitsFloat32(sorted, name, "TIPSY");
    const bool bonsai                = format == SnapshotFormat::TipsyBonsai;
    const ByteOrder order            = format == SnapshotFormat::TipsyStandard ? ByteOrder::Big : ByteOrder::Little;
    const std::vector<size_t> byKind = groupedOrder(sorted, recordKind);
    int32_t counts[3]                = {0, 0, 0};
    for (uint8_t t : sorted.type) ++counts[recordKind(t)];

    FileWriter out(path);
    out.put<double>(sorted.time, order);
    for (int32_t value : {int32_t(n), int32_t(3), counts[0], counts[1], counts[2], bonsai ? bonsaiVersion : 0})
    {
        out.put<int32_t>(value, order); // nbodies, ndim, nsph, ndark, nstar, pad
    }
    for (size_t i : byKind)
    {
        const Vec3d& x = sorted.pos[i];
        const Vec3d& v = sorted.vel[i];
        for (double f : {sorted.mass[i], x.x, x.y, x.z, v.x, v.y, v.z}) out.put<float>(float(f), order);
        const int kind = recordKind(sorted.type[i]);
        // gas: rho, temp, eps, metals, phi; star: metals, tform, then eps, phi as for dark.
        const int zeros = kind == 0 ? 5 : kind == 2 ? 2 : 0;
        for (int k = 0; k < zeros; ++k) out.put<float>(0.0f, order);
        if (kind == 0) continue;
        if (bonsai)
        {
            out.put<uint64_t>(sorted.id[i], ByteOrder::Little);
        }
        else
        {
            out.put<float>(0.0f, order); // eps: octwalk's softening is global, in run.json
            out.put<float>(0.0f, order); // phi: not computed for a snapshot
        }
    }
    out.close();
}

} // namespace io

} // namespace octwalk
