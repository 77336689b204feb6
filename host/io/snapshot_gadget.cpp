/// @file snapshot_gadget.cpp
/// GADGET-2 binary snapshots, format 1: Fortran records HEAD, POS, VEL, ID, MASS (then gas-only
/// blocks, which are ignored). Written little-endian, all particles as type 1 (halo).

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "host/io/binary_io.h"
#include "common/errors.h"
#include "host/io/snapshot.h"

namespace octwalk::io {

namespace {

constexpr uint32_t headerBytes   = 256;
constexpr int numTypes           = 6;
constexpr int haloType           = 1;
constexpr uint64_t markerBytes   = 4;
constexpr uint64_t maxBlockBytes = uint64_t(std::numeric_limits<int32_t>::max()); // the marker is a Fortran int32

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

struct GadgetHeader
{
    std::array<int32_t, numTypes> npart{};
    std::array<double, numTypes> mass{}; ///< MassTable: 0 means the masses are in the MASS block
    double time      = 0;
    int32_t numFiles = 1;
    ByteOrder order  = ByteOrder::Little;

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

/// The order in which the first marker reads 256. A first marker of 8 is format 2's label record.
ByteOrder gadgetByteOrder(FileReader& in)
{
    unsigned char raw[markerBytes];
    in.seek(0);
    in.read(raw, markerBytes, "HEAD record marker");
    const uint32_t little = decode<uint32_t>(raw, ByteOrder::Little);
    const uint32_t big    = decode<uint32_t>(raw, ByteOrder::Big);
    if (little == headerBytes) return ByteOrder::Little;
    if (big == headerBytes) return ByteOrder::Big;
    const bool format2 = little == 8 || big == 8;
    in.fail("HEAD record marker", 0,
            "is " + std::to_string(little) + " (little-endian) or " + std::to_string(big) +
                " (big-endian); a GADGET-2 format 1 file starts with 256" +
                (format2 ? " (8 starts a format 2 block label, which is not supported)" : ""));
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

GadgetHeader readGadgetHeader(FileReader& in)
{
    GadgetHeader h;
    h.order = gadgetByteOrder(in);
    in.seek(0);
    openRecord(in, h.order, "HEAD", headerBytes, headerBytes);
    unsigned char raw[headerBytes];
    const uint64_t at = in.offset();
    in.read(raw, headerBytes, "HEAD block");
    closeRecord(in, h.order, "HEAD", headerBytes);

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
    h.time = decode<double>(raw + offset::time, h.order);
    if (!std::isfinite(h.time))
    {
        in.fail("time", at + offset::time, "time = " + std::to_string(h.time) + " is not finite");
    }
    h.numFiles = decode<int32_t>(raw + offset::numFiles, h.order);
    if (h.numFiles > 1)
    {
        in.fail("num_files", at + offset::numFiles,
                "the snapshot is split over " + std::to_string(h.numFiles) +
                    " files; reading one of them would silently drop particles");
    }
    if (h.numFiles < 1)
    {
        in.fail("num_files", at + offset::numFiles, "is " + std::to_string(h.numFiles) + ", must be 1");
    }
    return h;
}

/// Every count against the file size before anything is allocated: the smallest file (float32, uint32
/// ids) that could hold the header's particles.
void checkCountsFitFile(const FileReader& in, const GadgetHeader& h)
{
    const uint64_t n     = h.total();
    const uint64_t massN = h.withMassBlock();
    uint64_t need        = 2 * markerBytes + headerBytes;
    if (n > 0) need += 3 * 2 * markerBytes + (12 + 12 + 4) * n;
    if (massN > 0) need += 2 * markerBytes + 4 * massN;
    if (need > in.size())
    {
        in.fail("npart", markerBytes + offset::npart,
                describeCounts(h) + " need at least " + std::to_string(need) + " bytes, the file has " +
                    std::to_string(in.size()));
    }
    if (12 * n > maxBlockBytes)
    {
        in.fail("npart", markerBytes + offset::npart,
                describeCounts(h) + " make a POS block larger than a format 1 record marker can describe");
    }
}

/// A single-file snapshot holds all its particles: npartTotal (with its high words) equals npart.
/// Checked after the blocks are read, whose markers say more about a damaged npart; the read position
/// is kept.
void checkTotalsMatchCounts(FileReader& in, const GadgetHeader& h)
{
    const uint64_t resume = in.offset();
    unsigned char raw[headerBytes];
    in.seek(markerBytes);
    in.read(raw, headerBytes, "HEAD block");
    for (int t = 0; t < numTypes; ++t)
    {
        const uint64_t lowAt  = offset::npartTotal + 4 * t;
        const uint64_t highAt = offset::npartTotalHigh + 4 * t;
        const uint64_t total =
            uint64_t(decode<uint32_t>(raw + lowAt, h.order)) | uint64_t(decode<uint32_t>(raw + highAt, h.order)) << 32;
        if (total != uint64_t(h.npart[t]))
        {
            in.fail(indexed("npartTotal", t), markerBytes + lowAt,
                    "is " + std::to_string(total) + " but npart[" + std::to_string(t) + "] is " +
                        std::to_string(h.npart[t]) + " in a single-file snapshot");
        }
    }
    in.seek(resume);
}

/// A block of `count` float32 or float64 values (the marker says which), widened to double; a
/// non-finite value is a FormatError naming the particle (value index / perParticle).
std::vector<double> readReals(FileReader& in, ByteOrder order, const char* name, uint64_t count, uint64_t perParticle)
{
    const uint32_t bytes = openRecord(in, order, name, 4 * count, 8 * count);
    const uint64_t at    = in.offset();
    const uint64_t width = bytes / count;
    std::vector<double> values;
    if (width == 4)
    {
        const std::vector<float> narrow = in.readArray<float>(count, order, std::string(name) + " block");
        values.assign(narrow.begin(), narrow.end());
    }
    else
    {
        values = in.readArray<double>(count, order, std::string(name) + " block");
    }
    closeRecord(in, order, name, bytes);
    for (uint64_t i = 0; i < count; ++i)
    {
        if (!std::isfinite(values[i]))
        {
            in.fail(name, at + i * width,
                    "particle " + std::to_string(i / perParticle) + " (in " + name + " block order) has the value " +
                        std::to_string(values[i]) + ", not finite");
        }
    }
    return values;
}

std::vector<uint64_t> readIds(FileReader& in, ByteOrder order, uint64_t count)
{
    const uint32_t bytes = openRecord(in, order, "ID", 4 * count, 8 * count);
    std::vector<uint64_t> ids;
    if (bytes == 4 * count)
    {
        const std::vector<uint32_t> narrow = in.readArray<uint32_t>(count, order, "ID block");
        ids.assign(narrow.begin(), narrow.end());
    }
    else
    {
        ids = in.readArray<uint64_t>(count, order, "ID block");
    }
    closeRecord(in, order, "ID", bytes);
    return ids;
}

/// Masses are one per particle in the file order: from the MassTable, or in turn from the MASS block.
std::vector<double> assignMasses(const GadgetHeader& h, const std::vector<double>& massBlock)
{
    std::vector<double> masses;
    masses.reserve(h.total());
    size_t next = 0;
    for (int t = 0; t < numTypes; ++t)
    {
        for (int32_t i = 0; i < h.npart[t]; ++i) masses.push_back(h.mass[t] == 0.0 ? massBlock[next++] : h.mass[t]);
    }
    return masses;
}

void writeRecord(FileWriter& out, uint32_t bytes, const std::function<void()>& payload)
{
    out.put<uint32_t>(bytes, ByteOrder::Little);
    payload();
    out.put<uint32_t>(bytes, ByteOrder::Little);
}

/// The MassTable entry of a set: its mass when all masses are one float32 value (a MASS block could
/// not keep their differences either, and so a re-read set writes the same bytes again); 0, which
/// means "see the MASS block", otherwise.
double commonMass(const ParticleSet& sorted)
{
    if (sorted.size() == 0) return 0.0;
    const float first = float(sorted.mass[0]);
    for (double m : sorted.mass)
    {
        if (float(m) != first) return 0.0;
    }
    return sorted.mass[0];
}

void encodeHeader(unsigned char* raw, const ParticleSet& sorted, double tableMass)
{
    const uint64_t n      = uint64_t(sorted.size());
    const ByteOrder order = ByteOrder::Little;
    encode<int32_t>(int32_t(n), order, raw + offset::npart + 4 * haloType);
    encode<double>(tableMass, order, raw + offset::mass + 8 * haloType);
    encode<double>(sorted.time, order, raw + offset::time);
    encode<double>(0.0, order, raw + offset::redshift);
    encode<uint32_t>(uint32_t(n), order, raw + offset::npartTotal + 4 * haloType);
    encode<int32_t>(1, order, raw + offset::numFiles);
    encode<double>(0.0, order, raw + offset::boxSize); // isolated: no periodic box
    encode<double>(0.0, order, raw + offset::omega0);  // isolated: readers treat time as plain time
    encode<double>(0.0, order, raw + offset::omegaLambda);
    encode<double>(1.0, order, raw + offset::hubbleParam); // h = 1: readers that divide by h change nothing
    encode<uint32_t>(uint32_t(n >> 32), order, raw + offset::npartTotalHigh + 4 * haloType);
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

ParticleSet readGadget2(const std::string& path)
{
    FileReader in(path);
    const GadgetHeader h = readGadgetHeader(in);
    checkCountsFitFile(in, h);

    const uint64_t n = h.total();
    ParticleSet p;
    p.time = h.time;
    // npartTotal must match npart; after the blocks read here, only whole records may follow (the gas-only blocks U, RHO, HSML, which
    // are skipped); anything else is trailing bytes of a damaged or foreign file.
    auto refuseTrailingBytes = [&in, &h] {
        checkTotalsMatchCounts(in, h);
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
    };
    if (n == 0) // GADGET-2 writes no block for an empty particle set
    {
        refuseTrailingBytes();
        return p;
    }

    const std::vector<double> pos = readReals(in, h.order, "POS", 3 * n, 3);
    const std::vector<double> vel = readReals(in, h.order, "VEL", 3 * n, 3);
    std::vector<uint64_t> ids     = readIds(in, h.order, n);
    std::vector<double> massBlock;
    if (h.withMassBlock() > 0) massBlock = readReals(in, h.order, "MASS", h.withMassBlock(), 1);
    refuseTrailingBytes();

    p.resize(int64_t(n));
    p.mass = assignMasses(h, massBlock);
    p.id   = std::move(ids);
    for (uint64_t i = 0; i < n; ++i)
    {
        p.pos[i] = {pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]};
        p.vel[i] = {vel[3 * i], vel[3 * i + 1], vel[3 * i + 2]};
    }
    return p;
}

void writeGadget2(const std::string& path, const ParticleSet& sorted)
{
    const uint64_t n = uint64_t(sorted.size());
    if (12 * n > maxBlockBytes)
    {
        throw FormatError("snapshot '" + path + "': " + std::to_string(n) +
                          " particles make a POS block larger than a GADGET-2 format 1 record marker can describe; "
                          "write hdf5 instead");
    }
    checkFitsFloat32(sorted, path, "GADGET-2");
    const double tableMass = commonMass(sorted);
    bool wideIds           = false;
    for (uint64_t id : sorted.id) wideIds = wideIds || id > std::numeric_limits<uint32_t>::max();

    const ByteOrder order = ByteOrder::Little;
    FileWriter out(path);
    unsigned char raw[headerBytes] = {};
    encodeHeader(raw, sorted, tableMass);
    writeRecord(out, headerBytes, [&] { out.write(raw, headerBytes); });
    if (n > 0)
    {
        writeRecord(out, uint32_t(12 * n), [&] {
            for (const Vec3d& x : sorted.pos)
            {
                for (double c : {x.x, x.y, x.z}) out.put<float>(float(c), order);
            }
        });
        writeRecord(out, uint32_t(12 * n), [&] {
            for (const Vec3d& v : sorted.vel)
            {
                for (double c : {v.x, v.y, v.z}) out.put<float>(float(c), order);
            }
        });
        writeRecord(out, uint32_t((wideIds ? 8 : 4) * n), [&] {
            for (uint64_t id : sorted.id)
            {
                if (wideIds) out.put<uint64_t>(id, order);
                else out.put<uint32_t>(uint32_t(id), order);
            }
        });
        if (tableMass == 0.0)
        {
            writeRecord(out, uint32_t(4 * n), [&] {
                for (double m : sorted.mass) out.put<float>(float(m), order);
            });
        }
    }
    out.close();
}

} // namespace octwalk::io
