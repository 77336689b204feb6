#pragma once
/// @file binary_io.h
/// Internals shared by the snapshot readers and writers (host/io/snapshot_*.cpp) and the checkpoint
/// (host/io/checkpoint.cpp): explicit byte order, the one file reader that checks every read against
/// the file size and names the field and byte offset of a failure, a buffered writer, and the
/// per-format entry points. Not part of the public API: include host/io/snapshot.h or
/// host/io/checkpoint.h instead.

#include <algorithm>
#include <cmath>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "host/core/cosmology.h"
#include "host/io/snapshot.h"

namespace octwalk::io {

enum class ByteOrder
{
    Little,
    Big,
};

inline ByteOrder hostByteOrder()
{
    const uint16_t one = 1;
    unsigned char first;
    std::memcpy(&first, &one, 1);
    return first == 1 ? ByteOrder::Little : ByteOrder::Big;
}

inline const char* toString(ByteOrder order) { return order == ByteOrder::Little ? "little-endian" : "big-endian"; }

/// The value of type T whose bytes, in `order`, start at p.
template<class T>
T decode(const unsigned char* p, ByteOrder order)
{
    static_assert(std::is_trivially_copyable_v<T>, "decode needs a plain value type");
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, p, sizeof(T));
    if (order != hostByteOrder()) std::reverse(bytes, bytes + sizeof(T));
    T value;
    std::memcpy(&value, bytes, sizeof(T));
    return value;
}

/// Stores `value` at p with its bytes in `order`.
template<class T>
void encode(T value, ByteOrder order, unsigned char* p)
{
    static_assert(std::is_trivially_copyable_v<T>, "encode needs a plain value type");
    std::memcpy(p, &value, sizeof(T));
    if (order != hostByteOrder()) std::reverse(p, p + sizeof(T));
}

/// The one shape of a file-format error: what kind of file ("snapshot", "checkpoint"), file, field,
/// byte offset, what is wrong.
[[noreturn]] inline void failAt(const std::string& kind, const std::string& path, const std::string& field,
                                uint64_t offset, const std::string& problem)
{
    throw FormatError(kind + " '" + path + "': field '" + field + "' at byte offset " + std::to_string(offset) + ": " +
                      problem);
}

/// A snapshot error (see above).
[[noreturn]] inline void failAt(const std::string& path, const std::string& field, uint64_t offset,
                                const std::string& problem)
{
    failAt("snapshot", path, field, offset, problem);
}

/// Sequential reads from a file whose size is known up front, so a count can be checked against the
/// bytes that are really there before anything is allocated.
class FileReader
{
public:
    /// FormatError when the path does not name a readable regular file.
    /// @param[in] path  the file
    /// @param[in] kind  what the file is, as every error names it ("snapshot", "checkpoint")
    explicit FileReader(const std::string& path, std::string kind = "snapshot") : path_(path), kind_(std::move(kind))
    {
        std::error_code error;
        if (!std::filesystem::is_regular_file(path, error))
        {
            const bool exists = std::filesystem::exists(path, error);
            throw FormatError(kind_ + " '" + path +
                              "': cannot read: " + (exists ? "not a regular file" : "no such file"));
        }
        size_ = std::filesystem::file_size(path, error);
        in_.open(path, std::ios::binary);
        if (error || !in_) throw FormatError(kind_ + " '" + path + "': cannot open for reading");
    }

    const std::string& path() const { return path_; }
    uint64_t size() const { return size_; }
    uint64_t offset() const { return offset_; }
    uint64_t remaining() const { return size_ - offset_; }

    void seek(uint64_t offset)
    {
        offset_ = std::min(offset, size_);
        in_.clear();
        in_.seekg(std::streamoff(offset_));
    }

    /// Every read from now on also hands its bytes, as they are in the file, to watcher (nullptr: none), so that
    /// a checksum is taken in the same pass as the contents.
    void watch(std::function<void(const unsigned char*, uint64_t)> watcher) { watcher_ = std::move(watcher); }

    /// Reads n bytes; FormatError naming `field` when the file ends first.
    void read(void* destination, uint64_t n, const std::string& field)
    {
        if (n > remaining())
        {
            fail(field, offset_,
                 "needs " + std::to_string(n) + " bytes but the file ends after " + std::to_string(remaining()) +
                     " (file size " + std::to_string(size_) + ")");
        }
        in_.read(static_cast<char*>(destination), std::streamsize(n));
        if (!in_) fail(field, offset_, "read error");
        offset_ += n;
        if (watcher_) watcher_(static_cast<const unsigned char*>(destination), n);
    }

    template<class T>
    T read(ByteOrder order, const std::string& field)
    {
        unsigned char bytes[sizeof(T)];
        read(bytes, sizeof(T), field);
        return decode<T>(bytes, order);
    }

    /// Reads `count` values of T, checking count * sizeof(T) against the bytes left first.
    template<class T>
    std::vector<T> readArray(uint64_t count, ByteOrder order, const std::string& field)
    {
        if (count > remaining() / sizeof(T))
        {
            fail(field, offset_,
                 std::to_string(count) + " values of " + std::to_string(sizeof(T)) +
                     " bytes run past the end of the file (" + std::to_string(remaining()) + " bytes left)");
        }
        std::vector<T> values(count);
        read(values.data(), count * sizeof(T), field);
        if (order != hostByteOrder())
        {
            for (T& v : values)
            {
                auto* bytes = reinterpret_cast<unsigned char*>(&v);
                std::reverse(bytes, bytes + sizeof(T));
            }
        }
        return values;
    }

    [[noreturn]] void fail(const std::string& field, uint64_t offset, const std::string& problem) const
    {
        failAt(kind_, path_, field, offset, problem);
    }

private:
    std::string path_, kind_;
    std::ifstream in_;
    uint64_t size_   = 0;
    uint64_t offset_ = 0;
    std::function<void(const unsigned char*, uint64_t)> watcher_;
};

/// Buffered writes with explicit byte order; close() reports a failed write as FormatError.
class FileWriter
{
public:
    explicit FileWriter(const std::string& path) : path_(path), out_(path, std::ios::binary | std::ios::trunc)
    {
        if (!out_) throw FormatError("snapshot '" + path + "': cannot open for writing");
        buffer_.reserve(bufferBytes);
    }

    void write(const void* data, uint64_t n)
    {
        const auto* bytes = static_cast<const unsigned char*>(data);
        buffer_.insert(buffer_.end(), bytes, bytes + n);
        if (buffer_.size() >= bufferBytes) flush();
    }

    template<class T>
    void put(T value, ByteOrder order)
    {
        unsigned char bytes[sizeof(T)];
        encode(value, order, bytes);
        write(bytes, sizeof(T));
    }

    /// Flushes and closes; FormatError if any write failed (disk full, I/O error).
    void close()
    {
        flush();
        out_.close();
        if (!out_) throw FormatError("snapshot '" + path_ + "': write failed (disk full or I/O error)");
    }

private:
    static constexpr size_t bufferBytes = size_t(1) << 20;

    void flush()
    {
        out_.write(reinterpret_cast<const char*>(buffer_.data()), std::streamsize(buffer_.size()));
        buffer_.clear();
    }

    std::string path_;
    std::ofstream out_;
    std::vector<unsigned char> buffer_;
};

/// GADGET's six particle types, 0..5.
constexpr int numParticleTypes = 6;

/// InputError unless the set's box, time and cosmology are what a file can state: boxSize finite and
/// >= 0, every position inside [0, boxSize) when it is > 0, and with a cosmology a time a > 0 (files
/// store u = v / sqrt(a)).
inline void checkWritableFrame(const ParticleSet& particles)
{
    const double box = particles.boxSize;
    if (!(std::isfinite(box) && box >= 0.0))
    {
        throw InputError("particle set boxSize = " + std::to_string(box) + " is invalid: must be finite and >= 0");
    }
    if (particles.cosmology && !(particles.time > 0.0))
    {
        throw InputError("particle set time (scale factor a) = " + std::to_string(particles.time) +
                         " is invalid for a cosmological set: must be > 0");
    }
    for (size_t i = 0; i < particles.pos.size() && box > 0.0; ++i)
    {
        const Vec3d& x = particles.pos[i];
        for (double c : {x.x, x.y, x.z})
        {
            if (!(c >= 0.0 && c < box))
            {
                throw InputError("particle " + std::to_string(i) + " (id " + std::to_string(particles.id[i]) +
                                 ") has a coordinate " + std::to_string(c) + " outside the periodic box [0, " +
                                 std::to_string(box) + ")");
            }
        }
    }
}

/// A copy of `particles` sorted by id. InputError when the arrays differ in length, a position,
/// velocity or mass is not finite, the time is not finite, two particles share an id, a type is not
/// 0..5, or checkWritableFrame refuses the box: a writer must not produce a file that its own reader
/// rejects. A set without types (type empty) is all type 1.
inline ParticleSet sortedForWriting(const ParticleSet& particles)
{
    const size_t n = particles.pos.size();
    if (particles.vel.size() != n || particles.mass.size() != n || particles.id.size() != n)
    {
        throw InputError("particle set has " + std::to_string(n) + " positions but " +
                         std::to_string(particles.vel.size()) + " velocities, " +
                         std::to_string(particles.mass.size()) + " masses and " + std::to_string(particles.id.size()) +
                         " ids");
    }
    if (!particles.type.empty() && particles.type.size() != n)
    {
        throw InputError("particle set has " + std::to_string(n) + " positions but " +
                         std::to_string(particles.type.size()) + " types");
    }
    if (!std::isfinite(particles.time))
    {
        throw InputError("particle set time = " + std::to_string(particles.time) + " is not finite");
    }
    for (size_t i = 0; i < n; ++i)
    {
        const Vec3d& x    = particles.pos[i];
        const Vec3d& v    = particles.vel[i];
        const bool finite = std::isfinite(x.x) && std::isfinite(x.y) && std::isfinite(x.z) && std::isfinite(v.x) &&
                            std::isfinite(v.y) && std::isfinite(v.z) && std::isfinite(particles.mass[i]);
        if (!finite)
        {
            throw InputError("particle " + std::to_string(i) + " (id " + std::to_string(particles.id[i]) +
                             ") has a non-finite position, velocity or mass");
        }
        if (!particles.type.empty() && particles.type[i] >= numParticleTypes)
        {
            throw InputError("particle " + std::to_string(i) + " (id " + std::to_string(particles.id[i]) +
                             ") has type " + std::to_string(int(particles.type[i])) + ", not a GADGET type 0..5");
        }
    }
    checkWritableFrame(particles);

    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return particles.id[a] < particles.id[b]; });

    ParticleSet sorted;
    sorted.resize(int64_t(n));
    sorted.time      = particles.time;
    sorted.boxSize   = particles.boxSize;
    sorted.cosmology = particles.cosmology;
    for (size_t i = 0; i < n; ++i)
    {
        const size_t j = order[i];
        sorted.pos[i]  = particles.pos[j];
        sorted.vel[i]  = particles.vel[j];
        sorted.mass[i] = particles.mass[j];
        sorted.id[i]   = particles.id[j];
        sorted.type[i] = particles.type.empty() ? uint8_t(1) : particles.type[j];
        if (i > 0 && sorted.id[i] == sorted.id[i - 1])
        {
            throw InputError("particle id " + std::to_string(sorted.id[i]) + " occurs twice");
        }
    }
    return sorted;
}

/// The indices of `sorted` grouped by classOf(type) (0, 1, ...), in their order (id order) within a
/// group: the order in which a format that keeps one block or record kind per class writes them.
template<class ClassOf>
std::vector<size_t> groupedOrder(const ParticleSet& sorted, ClassOf classOf)
{
    std::vector<size_t> order(sorted.pos.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return classOf(sorted.type[a]) < classOf(sorted.type[b]); });
    return order;
}

/// A coordinate in [0, box) as float32: float32 rounds a value just below box up to box itself, which
/// the file's reader would refuse, so that value becomes the largest float32 below box. Isolated sets
/// (box = 0) are stored as rounded.
inline float storedCoordinate(double x, double box)
{
    float f = float(x);
    while (box > 0.0 && double(f) >= box) f = std::nextafter(f, 0.0f);
    return f;
}

/// The factor from a set's velocities to the file's: 1 / sqrt(a) for a cosmological set (GADGET's
/// u = v_pec / sqrt(a)), 1 otherwise.
inline double velocityToFile(const ParticleSet& p) { return p.cosmology ? 1.0 / std::sqrt(p.time) : 1.0; }

/// A 64-bit count as GADGET's two 32-bit words (NumPart_Total and NumPart_Total_HighWord).
struct CountWords
{
    uint32_t low, high;
};
inline CountWords splitCount(uint64_t n) { return {uint32_t(n & 0xffffffffu), uint32_t(n >> 32)}; }
inline uint64_t joinCount(uint32_t low, uint32_t high) { return uint64_t(low) | uint64_t(high) << 32; }

/// The cosmological fields of a GADGET-2 or HDF5 header.
struct FrameHeader
{
    double time = 0, boxSize = 0, omega0 = 0, omegaLambda = 0, hubbleParam = 0;
};

/// Checks the header's frame fields and sets p.boxSize and, for a cosmological file (see
/// CosmologyReading), p.cosmology; before any particle is read, so that a bad header costs no work.
/// `fail(field, problem)` throws the reader's FormatError.
/// @param[in]  h        the header fields
/// @param[in]  reading  how to decide whether the file is cosmological
/// @param[out] p        boxSize and cosmology set
/// @param[in]  fail     [[noreturn]] reporter naming the header field
template<class Fail>
void applyFrameHeader(const FrameHeader& h, CosmologyReading reading, ParticleSet& p, Fail fail)
{
    if (!(std::isfinite(h.boxSize) && h.boxSize >= 0.0))
    {
        fail("BoxSize", std::to_string(h.boxSize) + " is not finite and >= 0");
    }
    const std::pair<const char*, double> omegas[3] = {
        {"Omega0", h.omega0}, {"OmegaLambda", h.omegaLambda}, {"HubbleParam", h.hubbleParam}};
    for (const auto& [name, value] : omegas)
    {
        if (!std::isfinite(value)) fail(name, std::to_string(value) + " is not finite");
    }
    p.boxSize               = h.boxSize;
    const bool cosmological = reading == CosmologyReading::Auto ? (h.boxSize > 0.0 && h.omega0 > 0.0)
                                                                : reading == CosmologyReading::Cosmological;
    if (!cosmological) return;
    if (!(h.time > 0.0))
    {
        fail("Time", "the scale factor a = " + std::to_string(h.time) + " of a cosmological file must be > 0");
    }
    const Cosmology c{h.omega0, h.omegaLambda, h.hubbleParam};
    try
    {
        validateCosmology(c, h.time, h.time);
    }
    catch (const ParameterError& e)
    {
        fail("Omega0", std::string("the cosmology of the file is invalid: ") + e.what());
    }
    p.cosmology = c;
}

/// Velocities as a file stores them (u = v_pec / sqrt(a) for a cosmological set) to the set's v_pec;
/// FormatError naming the particle when v_pec overflows (a huge a in a damaged header).
inline void velocitiesFromFile(ParticleSet& p, const std::string& path)
{
    if (!p.cosmology) return;
    const double fromFile = std::sqrt(p.time);
    for (size_t i = 0; i < p.vel.size(); ++i)
    {
        Vec3d& v = p.vel[i];
        v        = {v.x * fromFile, v.y * fromFile, v.z * fromFile};
        if (!(std::isfinite(v.x) && std::isfinite(v.y) && std::isfinite(v.z)))
        {
            throw FormatError("snapshot '" + path + "': particle " + std::to_string(i) + " (id " +
                              std::to_string(p.id[i]) + "): its velocity times sqrt(a) = sqrt(" +
                              std::to_string(p.time) + ") is not finite");
        }
    }
}

/// FormatError naming the first body of a periodic set (boxSize > 0) with a coordinate outside
/// [0, boxSize): a run would have to refuse it, so the reader does, before any work.
inline void checkInsideBox(const ParticleSet& p, const std::string& path)
{
    const double box = p.boxSize;
    if (!(box > 0.0)) return;
    const char* const axes[3] = {"x", "y", "z"};
    for (size_t i = 0; i < p.pos.size(); ++i)
    {
        const double c[3] = {p.pos[i].x, p.pos[i].y, p.pos[i].z};
        for (int k = 0; k < 3; ++k)
        {
            if (!(c[k] >= 0.0 && c[k] < box))
            {
                std::ostringstream s;
                s.precision(17);
                s << "snapshot '" << path << "': particle " << i << " (id " << p.id[i] << ") has " << axes[k] << " = "
                  << c[k] << " outside the periodic box [0, BoxSize = " << box << ")";
                throw FormatError(s.str());
            }
        }
    }
}

/// FormatError when a position, velocity (times `velocityFactor`, as stored) or mass of `sorted`
/// overflows float32, which `formatName` stores (a finite double must not silently become an infinity
/// in the file).
inline void checkFitsFloat32(const ParticleSet& sorted, const std::string& path, const char* formatName,
                             double velocityFactor = 1.0)
{
    const double largest = std::numeric_limits<float>::max();
    for (size_t i = 0; i < sorted.pos.size(); ++i)
    {
        const Vec3d v          = sorted.vel[i];
        const double f         = velocityFactor;
        const double values[7] = {sorted.pos[i].x, sorted.pos[i].y, sorted.pos[i].z, v.x * f,
                                  v.y * f,         v.z * f,         sorted.mass[i]};
        for (double v : values)
        {
            if (std::abs(v) > largest)
            {
                char value[32];
                std::snprintf(value, sizeof(value), "%.9g", v); // std::to_string(1e300) has 300 digits
                throw FormatError("snapshot '" + path + "': particle id " + std::to_string(sorted.id[i]) +
                                  " has a value " + value + " beyond float32 (at most 3.4028235e+38), which " +
                                  formatName + " stores");
            }
        }
    }
}

/// FormatError naming the first id that occurs twice in what was read from `path`.
inline void checkUniqueIds(const ParticleSet& particles, const std::string& path)
{
    std::vector<uint64_t> ids = particles.id;
    std::sort(ids.begin(), ids.end());
    const auto twice = std::adjacent_find(ids.begin(), ids.end());
    if (twice != ids.end())
    {
        throw FormatError("snapshot '" + path + "': field 'id': particle id " + std::to_string(*twice) +
                          " occurs twice");
    }
}

/// The 8-byte HDF5 signature at offset 0, 512, 1024, 2048, ... (where a user block may move it).
inline bool hasHdf5Signature(FileReader& in)
{
    static const unsigned char signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    for (uint64_t at = 0; at + 8 <= in.size(); at = (at == 0 ? 512 : 2 * at))
    {
        unsigned char bytes[8];
        in.seek(at);
        in.read(bytes, 8, "HDF5 signature");
        if (std::memcmp(bytes, signature, 8) == 0) return true;
    }
    return false;
}

// Per-format entry points; `sorted` comes from sortedForWriting, `path` is the temporary file and `name` the
// snapshot's own path, which messages name (the temporary's name means nothing to the user).
void writeTipsy(const std::string& path, const std::string& name, const ParticleSet& sorted, SnapshotFormat format);
ParticleSet readTipsy(const std::string& path, SnapshotFormat format);
/// The TIPSY variant of the file, or false when its header is not TIPSY in either byte order.
bool detectTipsy(FileReader& in, SnapshotFormat& format);

/// `format2`: GADGET-2 format 2, a label record before each block.
/// What a part of a GADGET-2 snapshot split over files says of the whole: the number of files and the
/// whole snapshot's count of each type (npartTotal). numFiles 1 with totals unset: a single-file snapshot.
struct GadgetSplit
{
    int32_t numFiles = 1;
    std::array<uint64_t, 6> totals{};
};
void writeGadget2(const std::string& path, const std::string& name, const ParticleSet& sorted, bool format2,
                  const GadgetSplit& split = {});
/// Either GADGET-2 format, told apart by the first record.
ParticleSet readGadget2(const std::string& path, const SnapshotReadOptions& options);
/// A first and a closing record marker of 256 (the HEAD block), in either byte order.
bool looksLikeGadget2(FileReader& in);
/// A first record of 8 bytes holding the label "HEAD", then a HEAD record of 256, in either byte order.
bool looksLikeGadget2Format2(FileReader& in);

/// Builds the HDF5 snapshot of sorted in memory and hands its bytes to `write` (the atomic writer); HDF5
/// itself writes no file, and path only names the snapshot in errors.
void writeHdf5(const std::string& path, const ParticleSet& sorted, const SnapshotMeta& meta,
               const std::function<void(const void* bytes, size_t size)>& write);
ParticleSet readHdf5(const std::string& path, const SnapshotReadOptions& options);

} // namespace octwalk::io
