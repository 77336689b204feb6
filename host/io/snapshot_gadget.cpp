/// @file snapshot_gadget.cpp
/// GADGET-2 binary snapshots, format 1 and format 2: Fortran records HEAD, POS, VEL, ID, MASS (then
/// gas-only blocks: U is written, zeros, when there is gas; all are skipped on read), format 2 with a
/// 16-byte label record before each block. Written little-endian, bodies ordered by type.

#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "host/io/binary_io.h"
#include "common/errors.h"
#include "host/io/snapshot.h"

namespace octwalk::io {

namespace {

constexpr uint32_t headerBytes   = 256;
constexpr int numTypes           = numParticleTypes;
constexpr uint64_t markerBytes   = 4;
constexpr uint32_t labelBytes    = 8; // format 2 label payload: char[4] name, int32 size of the block's record
constexpr uint64_t maxBlockBytes = uint64_t(std::numeric_limits<int32_t>::max()); // the marker is a Fortran int32

/// The format 2 block names, four characters, blank-padded.
namespace label {
constexpr char head[] = "HEAD";
constexpr char pos[]  = "POS ";
constexpr char vel[]  = "VEL ";
constexpr char id[]   = "ID  ";
constexpr char mass[] = "MASS";
constexpr char u[]    = "U   ";
} // namespace label

/// Byte offsets inside the 256-byte header payload (FORMATS.md).
namespace offset {
constexpr uint64_t npart          = 0;
constexpr uint64_t mass           = 24;
constexpr uint64_t time           = 72;
constexpr uint64_t redshift       = 80;
constexpr uint64_t npartTotal     = 96;
constexpr uint64_t numFiles       = 124;
constexpr uint64_t boxSize        = 128;
constexpr uint64_t omega0         = 136;
constexpr uint64_t omegaLambda    = 144;
constexpr uint64_t hubbleParam    = 152;
constexpr uint64_t npartTotalHigh = 168;
} // namespace offset

/// The header offset of a frame field named by applyFrameHeader.
uint64_t frameOffset(const std::string& field)
{
    if (field == "BoxSize") return offset::boxSize;
    if (field == "OmegaLambda") return offset::omegaLambda;
    if (field == "HubbleParam") return offset::hubbleParam;
    if (field == "Time") return offset::time;
    return offset::omega0;
}

struct GadgetHeader
{
    std::array<int32_t, numTypes> npart{};
    std::array<double, numTypes> mass{}; ///< MassTable: 0 means the masses are in the MASS block
    FrameHeader frame;
    int32_t numFiles   = 1;
    ByteOrder order    = ByteOrder::Little;
    bool format2       = false;
    uint64_t payloadAt = markerBytes; ///< file offset of the 256 header bytes
    std::array<unsigned char, headerBytes> raw{};

    uint64_t total() const
    {
        uint64_t n = 0;
        for (int32_t c : npart) n += uint64_t(c);
        return n;
    }
    /// Particles whose mass is in the MASS block.
    uint64_t withMassBlock() const
    {
        uint64_t n = 0;
        for (int t = 0; t < numTypes; ++t)
        {
            if (mass[t] == 0.0) n += uint64_t(npart[t]);
        }
        return n;
    }
};

std::string indexed(const char* name, int t) { return std::string(name) + "[" + std::to_string(t) + "]"; }

std::string describeCounts(const GadgetHeader& h)
{
    std::string s = "npart = {";
    for (int t = 0; t < numTypes; ++t) s += (t ? ", " : "") + std::to_string(h.npart[t]);
    return s + "}";
}

/// The byte order, and the format, in which the first marker reads 256 (format 1) or 8 (format 2's
/// label record).
ByteOrder gadgetLayout(FileReader& in, bool& format2)
{
    unsigned char raw[markerBytes];
    in.seek(0);
    in.read(raw, markerBytes, "HEAD record marker");
    const uint32_t little = decode<uint32_t>(raw, ByteOrder::Little);
    const uint32_t big    = decode<uint32_t>(raw, ByteOrder::Big);
    for (ByteOrder order : {ByteOrder::Little, ByteOrder::Big})
    {
        const uint32_t first = order == ByteOrder::Little ? little : big;
        if (first == headerBytes || first == labelBytes)
        {
            format2 = first == labelBytes;
            return order;
        }
    }
    in.fail("HEAD record marker", 0,
            "is " + std::to_string(little) + " (little-endian) or " + std::to_string(big) +
                " (big-endian); a GADGET-2 file starts with 256 (format 1) or 8 (format 2's block label)");
}

/// Reads the leading marker of block `name`; it must announce one of the two payload sizes and the
/// payload plus the closing marker must fit in the file. Returns the payload size.
uint32_t openRecord(FileReader& in, ByteOrder order, const std::string& name, uint64_t size, uint64_t otherSize)
{
    const uint64_t at = in.offset();
    if (in.remaining() < markerBytes)
    {
        in.fail(name + " record marker", at,
                "the file ends before the " + name + " block (file size " + std::to_string(in.size()) + ")");
    }
    const uint32_t marker = in.read<uint32_t>(order, name + " record marker");
    if (marker != size && marker != otherSize)
    {
        const std::string expected =
            size == otherSize ? std::to_string(size) : std::to_string(size) + " or " + std::to_string(otherSize);
        in.fail(name + " record marker", at, "is " + std::to_string(marker) + ", expected " + expected);
    }
    if (uint64_t(marker) + markerBytes > in.remaining())
    {
        in.fail(name + " block", at + markerBytes,
                std::to_string(marker) + " bytes and the end marker run past the end of the file (" +
                    std::to_string(in.remaining()) + " bytes left)");
    }
    return marker;
}

void closeRecord(FileReader& in, ByteOrder order, const std::string& name, uint32_t size)
{
    const uint64_t at     = in.offset();
    const uint32_t marker = in.read<uint32_t>(order, name + " record end marker");
    if (marker != size)
    {
        in.fail(name + " record end marker", at,
                "is " + std::to_string(marker) + " but the leading marker says " + std::to_string(size));
    }
}

/// The four label characters as text, non-printable bytes as \xNN.
std::string printable(const char* name)
{
    std::string s;
    for (int k = 0; k < 4; ++k)
    {
        const unsigned char c = static_cast<unsigned char>(name[k]);
        if (c >= 32 && c < 127)
        {
            s += char(c);
        }
        else
        {
            static const char hex[] = "0123456789abcdef";
            s += std::string("\\x") + hex[c >> 4] + hex[c & 15];
        }
    }
    return s;
}

/// Opens block `name` (a label constant) as openRecord does, after its format 2 label record when the
/// file has them: the label must name this block and announce its record size (payload + 8).
uint32_t openBlock(FileReader& in, const GadgetHeader& h, const char* name, uint64_t size, uint64_t otherSize)
{
    std::string trimmed(name);
    trimmed.erase(trimmed.find_last_not_of(' ') + 1);
    if (!h.format2) return openRecord(in, h.order, trimmed, size, otherSize);

    const std::string field = trimmed + " label";
    const uint64_t at       = in.offset();
    openRecord(in, h.order, field, labelBytes, labelBytes);
    char found[4];
    in.read(found, 4, field + " name");
    const uint32_t announced = in.read<uint32_t>(h.order, field + " block size");
    closeRecord(in, h.order, field, labelBytes);
    if (std::memcmp(found, name, 4) != 0)
    {
        in.fail(field, at + markerBytes,
                "is \"" + printable(found) + "\" where the " + trimmed + " block's label \"" + name + "\" belongs");
    }
    const uint32_t payload = openRecord(in, h.order, trimmed, size, otherSize);
    if (uint64_t(announced) != uint64_t(payload) + 2 * markerBytes)
    {
        in.fail(field + " block size", at + markerBytes + 4,
                "is " + std::to_string(announced) + " but the " + trimmed + " record that follows takes " +
                    std::to_string(uint64_t(payload) + 2 * markerBytes) + " bytes");
    }
    return payload;
}

GadgetHeader readGadgetHeader(FileReader& in)
{
    GadgetHeader h;
    h.order = gadgetLayout(in, h.format2);
    in.seek(0);
    openBlock(in, h, label::head, headerBytes, headerBytes);
    const uint64_t at = h.payloadAt = in.offset();
    in.read(h.raw.data(), headerBytes, "HEAD block");
    closeRecord(in, h.order, "HEAD", headerBytes);
    const unsigned char* raw = h.raw.data();

    for (int t = 0; t < numTypes; ++t)
    {
        const uint64_t npartAt = offset::npart + 4 * t;
        h.npart[t]             = decode<int32_t>(raw + npartAt, h.order);
        if (h.npart[t] < 0)
        {
            in.fail(indexed("npart", t), at + npartAt, "is " + std::to_string(h.npart[t]) + ", negative");
        }
        const uint64_t massAt = offset::mass + 8 * t;
        h.mass[t]             = decode<double>(raw + massAt, h.order);
        if (!(std::isfinite(h.mass[t]) && h.mass[t] >= 0.0))
        {
            in.fail(indexed("mass", t), at + massAt,
                    "MassTable entry " + std::to_string(h.mass[t]) + " is not finite and >= 0");
        }
    }
    h.frame.time = decode<double>(raw + offset::time, h.order);
    if (!std::isfinite(h.frame.time))
    {
        in.fail("time", at + offset::time, "time = " + std::to_string(h.frame.time) + " is not finite");
    }
    h.frame.boxSize     = decode<double>(raw + offset::boxSize, h.order);
    h.frame.omega0      = decode<double>(raw + offset::omega0, h.order);
    h.frame.omegaLambda = decode<double>(raw + offset::omegaLambda, h.order);
    h.frame.hubbleParam = decode<double>(raw + offset::hubbleParam, h.order);
    h.numFiles          = decode<int32_t>(raw + offset::numFiles, h.order);
    if (h.numFiles < 1)
    {
        in.fail("num_files", at + offset::numFiles, "is " + std::to_string(h.numFiles) + ", must be >= 1");
    }
    return h;
}

/// Every count against the file size before anything is allocated: the smallest file (float32, uint32
/// ids) that could hold the header's particles.
void checkCountsFitFile(const FileReader& in, const GadgetHeader& h)
{
    const uint64_t n        = h.total();
    const uint64_t massN    = h.withMassBlock();
    const uint64_t perBlock = 2 * markerBytes + (h.format2 ? 2 * markerBytes + labelBytes : 0);
    uint64_t need           = perBlock + headerBytes;
    if (n > 0) need += 3 * perBlock + (12 + 12 + 4) * n;
    if (massN > 0) need += perBlock + 4 * massN;
    if (need > in.size())
    {
        in.fail("npart", h.payloadAt + offset::npart,
                describeCounts(h) + " need at least " + std::to_string(need) + " bytes, the file has " +
                    std::to_string(in.size()));
    }
    if (12 * n > maxBlockBytes)
    {
        in.fail("npart", h.payloadAt + offset::npart,
                describeCounts(h) + " make a POS block larger than a GADGET-2 record marker can describe");
    }
}

/// A single-file snapshot holds all its particles: npartTotal (with its high words) equals npart.
/// GADGET-4 compiled with GADGET2_HEADER writes the header correctly up to HubbleParam and leaves the rest,
/// npartTotalHighWord included, uninitialised: when every low word equals npart, the high words are
/// ignored with a notice. Checked after the blocks are read, whose markers say more about a damaged npart.
void checkTotalsMatchCounts(const FileReader& in, const GadgetHeader& h, const SnapshotReadOptions& options)
{
    const unsigned char* raw = h.raw.data();
    bool highWordsSet        = false;
    std::string highWords;
    for (int t = 0; t < numTypes; ++t)
    {
        const uint64_t lowAt  = offset::npartTotal + 4 * t;
        const uint64_t highAt = offset::npartTotalHigh + 4 * t;
        const uint32_t low = decode<uint32_t>(raw + lowAt, h.order), high = decode<uint32_t>(raw + highAt, h.order);
        if (uint64_t(low) != uint64_t(h.npart[t]))
        {
            in.fail(indexed("npartTotal", t), h.payloadAt + lowAt,
                    "is " + std::to_string(joinCount(low, high)) + " (with npartTotalHighWord[" + std::to_string(t) +
                        "]) but npart[" + std::to_string(t) + "] is " + std::to_string(h.npart[t]) +
                        " in a single-file snapshot");
        }
        highWordsSet = highWordsSet || high != 0;
        highWords += (t ? ", " : "") + std::to_string(high);
    }
    if (highWordsSet)
    {
        snapshotNotice(options, "'" + in.path() + "': npartTotalHighWord = {" + highWords +
                                    "} ignored: the file is a single-file snapshot whose npartTotal low words equal "
                                    "npart (GADGET-4 leaves the header's tail after HubbleParam uninitialised)");
    }
}

/// A block of `count` float32 or float64 values (the marker says which), widened to double; a
/// non-finite value is a FormatError naming the particle (value index / perParticle).
std::vector<double> readReals(FileReader& in, const GadgetHeader& h, const char* name, uint64_t count,
                              uint64_t perParticle)
{
    const uint32_t bytes = openBlock(in, h, name, 4 * count, 8 * count);
    std::string trimmed(name);
    trimmed.erase(trimmed.find_last_not_of(' ') + 1);
    const uint64_t at    = in.offset();
    const uint64_t width = bytes / count;
    std::vector<double> values;
    if (width == 4)
    {
        const std::vector<float> narrow = in.readArray<float>(count, h.order, trimmed + " block");
        values.assign(narrow.begin(), narrow.end());
    }
    else
    {
        values = in.readArray<double>(count, h.order, trimmed + " block");
    }
    closeRecord(in, h.order, trimmed, bytes);
    for (uint64_t i = 0; i < count; ++i)
    {
        if (!std::isfinite(values[i]))
        {
            in.fail(trimmed, at + i * width,
                    "particle " + std::to_string(i / perParticle) + " (in " + trimmed + " block order) has the value " +
                        std::to_string(values[i]) + ", not finite");
        }
    }
    return values;
}

std::vector<uint64_t> readIds(FileReader& in, const GadgetHeader& h, uint64_t count)
{
    const uint32_t bytes = openBlock(in, h, label::id, 4 * count, 8 * count);
    std::vector<uint64_t> ids;
    if (bytes == 4 * count)
    {
        const std::vector<uint32_t> narrow = in.readArray<uint32_t>(count, h.order, "ID block");
        ids.assign(narrow.begin(), narrow.end());
    }
    else
    {
        ids = in.readArray<uint64_t>(count, h.order, "ID block");
    }
    closeRecord(in, h.order, "ID", bytes);
    return ids;
}

/// After the blocks read here only whole records may follow (the gas-only blocks U, RHO, HSML and, in
/// format 2, their labels, which are skipped); anything else is trailing bytes of a damaged or
/// foreign file. npartTotal must match npart.
void refuseTrailingBytes(FileReader& in, const GadgetHeader& h, const SnapshotReadOptions& options)
{
    if (h.numFiles == 1) checkTotalsMatchCounts(in, h, options);
    while (in.remaining() != 0)
    {
        const uint64_t at = in.offset(), left = in.remaining();
        bool whole = false;
        if (left >= 2 * markerBytes)
        {
            const uint64_t marker = in.read<uint32_t>(h.order, "trailing record marker");
            if (marker <= left - 2 * markerBytes)
            {
                in.seek(at + markerBytes + marker);
                whole = in.read<uint32_t>(h.order, "trailing record end marker") == marker;
            }
        }
        if (!whole)
        {
            in.fail("end of file", at,
                    std::to_string(left) + " trailing bytes after the last block, not a whole record");
        }
    }
}

/// Masses and types, one per particle in the file order: masses from the MassTable, or in turn from
/// the MASS block; types from npart.
void assignMassesAndTypes(const GadgetHeader& h, const std::vector<double>& massBlock, ParticleSet& p)
{
    size_t next = 0, i = 0;
    for (int t = 0; t < numTypes; ++t)
    {
        for (int32_t k = 0; k < h.npart[t]; ++k, ++i)
        {
            p.mass[i] = h.mass[t] == 0.0 ? massBlock[next++] : h.mass[t];
            p.type[i] = uint8_t(t);
        }
    }
}

void writeRecord(FileWriter& out, uint32_t bytes, const std::function<void()>& payload)
{
    out.put<uint32_t>(bytes, ByteOrder::Little);
    payload();
    out.put<uint32_t>(bytes, ByteOrder::Little);
}

/// A block: in format 2 its label record first (name, then the size of the block's record).
void writeBlock(FileWriter& out, bool format2, const char* name, uint32_t bytes, const std::function<void()>& payload)
{
    if (format2)
    {
        writeRecord(out, labelBytes, [&] {
            out.write(name, 4);
            out.put<uint32_t>(uint32_t(bytes + 2 * markerBytes), ByteOrder::Little);
        });
    }
    writeRecord(out, bytes, payload);
}

/// What the writer puts in the header for the bodies of each type.
struct TypeTable
{
    std::array<uint64_t, numTypes> count{};
    /// The mass of every body of the type when all of them have one float32 mass (a MASS block could
    /// not keep their differences either, and so a re-read set writes the same bytes again); 0, which
    /// means "see the MASS block", otherwise.
    std::array<double, numTypes> mass{};
};

TypeTable typeTable(const ParticleSet& sorted, const std::vector<size_t>& order)
{
    TypeTable table;
    std::array<bool, numTypes> shared;
    shared.fill(true);
    for (size_t i : order)
    {
        const int t = sorted.type[i];
        if (table.count[t]++ == 0) table.mass[t] = sorted.mass[i];
        shared[t] = shared[t] && float(sorted.mass[i]) == float(table.mass[t]);
    }
    for (int t = 0; t < numTypes; ++t)
    {
        if (!shared[t]) table.mass[t] = 0.0;
    }
    return table;
}

void encodeHeader(unsigned char* raw, const ParticleSet& sorted, const TypeTable& table, const GadgetSplit& split)
{
    const ByteOrder order = ByteOrder::Little;
    for (int t = 0; t < numTypes; ++t)
    {
        const CountWords words = splitCount(split.numFiles > 1 ? split.totals[size_t(t)] : table.count[t]);
        encode<int32_t>(int32_t(table.count[t]), order, raw + offset::npart + 4 * t);
        encode<double>(table.mass[t], order, raw + offset::mass + 8 * t);
        encode<uint32_t>(words.low, order, raw + offset::npartTotal + 4 * t);
        encode<uint32_t>(words.high, order, raw + offset::npartTotalHigh + 4 * t);
    }
    const std::optional<Cosmology>& c = sorted.cosmology;
    encode<double>(sorted.time, order, raw + offset::time);
    encode<double>(c ? 1.0 / sorted.time - 1.0 : 0.0, order, raw + offset::redshift);
    encode<int32_t>(split.numFiles, order, raw + offset::numFiles);
    encode<double>(sorted.boxSize, order, raw + offset::boxSize);
    // Isolated: Omega0 = OmegaLambda = 0, so that readers treat time as plain time; h = 1 changes
    // nothing in a reader that divides by it.
    encode<double>(c ? c->omega0 : 0.0, order, raw + offset::omega0);
    encode<double>(c ? c->omegaLambda : 0.0, order, raw + offset::omegaLambda);
    encode<double>(c ? c->hubbleParam : 1.0, order, raw + offset::hubbleParam);
}

bool labelledHeadAt(FileReader& in, ByteOrder order)
{
    in.seek(0);
    if (in.read<uint32_t>(order, "HEAD label record marker") != labelBytes) return false;
    char name[4];
    in.read(name, 4, "HEAD label name");
    in.seek(markerBytes + labelBytes);
    if (in.read<uint32_t>(order, "HEAD label record end marker") != labelBytes) return false;
    const uint64_t head = 2 * markerBytes + labelBytes;
    in.seek(head);
    const uint32_t first = in.read<uint32_t>(order, "HEAD record marker");
    in.seek(head + markerBytes + headerBytes);
    const uint32_t last = in.read<uint32_t>(order, "HEAD record end marker");
    return std::memcmp(name, label::head, 4) == 0 && first == headerBytes && last == headerBytes;
}

} // namespace

bool looksLikeGadget2(FileReader& in)
{
    if (in.size() < 2 * markerBytes + headerBytes) return false;
    for (ByteOrder order : {ByteOrder::Little, ByteOrder::Big})
    {
        in.seek(0);
        const uint32_t first = in.read<uint32_t>(order, "HEAD record marker");
        in.seek(markerBytes + headerBytes);
        const uint32_t last = in.read<uint32_t>(order, "HEAD record end marker");
        if (first == headerBytes && last == headerBytes) return true;
    }
    return false;
}

bool looksLikeGadget2Format2(FileReader& in)
{
    if (in.size() < 4 * markerBytes + labelBytes + headerBytes) return false;
    return labelledHeadAt(in, ByteOrder::Little) || labelledHeadAt(in, ByteOrder::Big);
}

namespace {

/// The particles of one file (one part of a multi-file snapshot), in its order: positions, velocities as
/// stored (u), ids, masses and types; its header h read, its frame checked by the caller.
ParticleSet readGadgetParticles(FileReader& in, const GadgetHeader& h, const SnapshotReadOptions& options)
{
    checkCountsFitFile(in, h);
    ParticleSet p;
    const uint64_t n = h.total();
    if (n == 0) // GADGET-2 writes no block for an empty particle set
    {
        refuseTrailingBytes(in, h, options);
        return p;
    }
    const std::vector<double> pos = readReals(in, h, label::pos, 3 * n, 3);
    const std::vector<double> vel = readReals(in, h, label::vel, 3 * n, 3);
    std::vector<uint64_t> ids     = readIds(in, h, n);
    std::vector<double> massBlock;
    if (h.withMassBlock() > 0) massBlock = readReals(in, h, label::mass, h.withMassBlock(), 1);
    refuseTrailingBytes(in, h, options);

    p.resize(int64_t(n));
    assignMassesAndTypes(h, massBlock, p);
    p.id = std::move(ids);
    for (uint64_t i = 0; i < n; ++i)
    {
        p.pos[i] = {pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]};
        p.vel[i] = {vel[3 * i], vel[3 * i + 1], vel[3 * i + 2]};
    }
    return p;
}

/// npartTotal of a header, high words joined: the whole snapshot's count of each type.
std::array<uint64_t, numTypes> snapshotTotals(const GadgetHeader& h)
{
    std::array<uint64_t, numTypes> totals{};
    for (int t = 0; t < numTypes; ++t)
    {
        totals[size_t(t)] = joinCount(decode<uint32_t>(h.raw.data() + offset::npartTotal + 4 * t, h.order),
                                      decode<uint32_t>(h.raw.data() + offset::npartTotalHigh + 4 * t, h.order));
    }
    return totals;
}

/// The base name of a part of a multi-file snapshot, BASE.K -> BASE; empty when path has no numeric suffix.
std::string multiFileBase(const std::string& path)
{
    const size_t dot = path.find_last_of('.');
    if (dot == std::string::npos || dot + 1 == path.size()) return {};
    for (size_t i = dot + 1; i < path.size(); ++i)
    {
        if (!std::isdigit(static_cast<unsigned char>(path[i]))) return {};
    }
    return path.substr(0, dot);
}

void append(ParticleSet& all, const ParticleSet& part)
{
    all.pos.insert(all.pos.end(), part.pos.begin(), part.pos.end());
    all.vel.insert(all.vel.end(), part.vel.begin(), part.vel.end());
    all.mass.insert(all.mass.end(), part.mass.begin(), part.mass.end());
    all.id.insert(all.id.end(), part.id.begin(), part.id.end());
    all.type.insert(all.type.end(), part.type.begin(), part.type.end());
}

/// Parts 1..numFiles-1 of a multi-file snapshot (GADGET's BASE.0 ... BASE.(numFiles - 1)) appended to p, which
/// holds part 0's particles: each part's header must agree with part 0's on the file count, the totals and the
/// frame, and the parts' counts must add up to the totals.
void readOtherParts(const std::string& base, const GadgetHeader& first, const SnapshotReadOptions& options,
                    ParticleSet& p)
{
    const std::array<uint64_t, numTypes> totals = snapshotTotals(first);
    std::array<uint64_t, numTypes> sum{};
    for (int t = 0; t < numTypes; ++t) sum[size_t(t)] = uint64_t(first.npart[t]);
    for (int32_t k = 1; k < first.numFiles; ++k)
    {
        FileReader in(base + "." + std::to_string(k));
        const GadgetHeader h = readGadgetHeader(in);
        if (h.numFiles != first.numFiles)
        {
            in.fail("num_files", h.payloadAt + offset::numFiles,
                    "is " + std::to_string(h.numFiles) + " but part 0 says " + std::to_string(first.numFiles));
        }
        const FrameHeader &a = h.frame, &b = first.frame;
        if (a.time != b.time || a.boxSize != b.boxSize || a.omega0 != b.omega0 || a.omegaLambda != b.omegaLambda ||
            a.hubbleParam != b.hubbleParam)
        {
            in.fail("time", h.payloadAt + offset::time,
                    "time, box size or cosmology differ from part 0's: the parts are not of one snapshot");
        }
        if (snapshotTotals(h) != totals)
        {
            in.fail("npartTotal", h.payloadAt + offset::npartTotal, "differs from part 0's: " + describeCounts(first));
        }
        for (int t = 0; t < numTypes; ++t) sum[size_t(t)] += uint64_t(h.npart[t]);
        append(p, readGadgetParticles(in, h, options));
    }
    for (int t = 0; t < numTypes; ++t)
    {
        if (sum[size_t(t)] != totals[size_t(t)])
        {
            failAt(base + ".0", indexed("npartTotal", t), first.payloadAt + offset::npartTotal + 4 * uint64_t(t),
                   "is " + std::to_string(totals[size_t(t)]) + " but the " + std::to_string(first.numFiles) +
                       " parts hold " + std::to_string(sum[size_t(t)]) + " particles of type " + std::to_string(t));
        }
    }
}

} // namespace

ParticleSet readGadget2(const std::string& path, const SnapshotReadOptions& options)
{
    FileReader in(path);
    const GadgetHeader h   = readGadgetHeader(in);
    const std::string base = h.numFiles > 1 ? multiFileBase(path) : std::string();
    if (h.numFiles > 1 && (base.empty() || base + ".0" != path))
    {
        in.fail("num_files", h.payloadAt + offset::numFiles,
                "the snapshot is split over " + std::to_string(h.numFiles) +
                    " files: read it from its first part, BASE.0 (or BASE), not this one");
    }
    ParticleSet p;
    p.time = h.frame.time;
    applyFrameHeader(h.frame, options.cosmology, p, [&](const std::string& field, const std::string& problem) {
        in.fail(field, h.payloadAt + frameOffset(field), problem);
    });
    ParticleSet particles = readGadgetParticles(in, h, options);
    if (h.numFiles > 1) readOtherParts(base, h, options, particles);
    p.pos  = std::move(particles.pos);
    p.vel  = std::move(particles.vel);
    p.mass = std::move(particles.mass);
    p.id   = std::move(particles.id);
    p.type = std::move(particles.type);
    velocitiesFromFile(p, path);
    return p;
}

void writeGadget2(const std::string& path, const std::string& name, const ParticleSet& sorted, bool format2,
                  const GadgetSplit& split)
{
    const uint64_t n = uint64_t(sorted.size());
    if (12 * n > maxBlockBytes)
    {
        throw FormatError("snapshot '" + name + "': " + std::to_string(n) +
                          " particles make a POS block larger than a GADGET-2 record marker can describe; "
                          "write hdf5 instead");
    }
    if (sorted.cosmology && !(sorted.boxSize > 0.0 && sorted.cosmology->omega0 > 0.0))
    {
        throw FormatError("snapshot '" + name + "': a cosmological set with BoxSize = " +
                          std::to_string(sorted.boxSize) + " and Omega0 = " + std::to_string(sorted.cosmology->omega0) +
                          " cannot be written to GADGET-2, whose readers take a file as cosmological only when "
                          "both are > 0");
    }
    const double toFile = velocityToFile(sorted);
    checkFitsFloat32(sorted, name, "GADGET-2", toFile);
    const std::vector<size_t> order = groupedOrder(sorted, [](uint8_t t) { return int(t); });
    const TypeTable table           = typeTable(sorted, order);
    bool wideIds                    = false;
    for (uint64_t id : sorted.id) wideIds = wideIds || id > std::numeric_limits<uint32_t>::max();

    const ByteOrder little = ByteOrder::Little;
    const double box       = sorted.boxSize;
    FileWriter out(path);
    unsigned char raw[headerBytes] = {};
    encodeHeader(raw, sorted, table, split);
    writeBlock(out, format2, label::head, headerBytes, [&] { out.write(raw, headerBytes); });
    if (n == 0)
    {
        out.close();
        return;
    }
    writeBlock(out, format2, label::pos, uint32_t(12 * n), [&] {
        for (size_t i : order)
        {
            const Vec3d& x = sorted.pos[i];
            for (double c : {x.x, x.y, x.z}) out.put<float>(storedCoordinate(c, box), little);
        }
    });
    writeBlock(out, format2, label::vel, uint32_t(12 * n), [&] {
        for (size_t i : order)
        {
            const Vec3d& v = sorted.vel[i];
            for (double c : {v.x, v.y, v.z}) out.put<float>(float(c * toFile), little);
        }
    });
    writeBlock(out, format2, label::id, uint32_t((wideIds ? 8 : 4) * n), [&] {
        for (size_t i : order)
        {
            if (wideIds) out.put<uint64_t>(sorted.id[i], little);
            else out.put<uint32_t>(uint32_t(sorted.id[i]), little);
        }
    });
    uint64_t massN = 0;
    for (int t = 0; t < numTypes; ++t) massN += table.mass[t] == 0.0 ? table.count[t] : 0;
    if (massN > 0)
    {
        writeBlock(out, format2, label::mass, uint32_t(4 * massN), [&] {
            for (size_t i : order)
            {
                if (table.mass[sorted.type[i]] == 0.0) out.put<float>(float(sorted.mass[i]), little);
            }
        });
    }
    const uint64_t gas = table.count[0];
    if (gas > 0) // GADGET-2 reads the specific energy of gas from initial conditions; octwalk has none
    {
        writeBlock(out, format2, label::u, uint32_t(4 * gas), [&] {
            for (uint64_t i = 0; i < gas; ++i) out.put<float>(0.0f, little);
        });
    }
    out.close();
}

} // namespace octwalk::io
