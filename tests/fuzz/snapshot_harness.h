#pragma once
// What the snapshot fuzz targets (fuzz_tipsy.cpp, fuzz_gadget2.cpp, fuzz_hdf5.cpp) do with one input,
// shared with the regression replay (test_fuzz_replay.cpp), which runs every reproducer under
// tests/fuzz/regressions/ and every seed under tests/fuzz/corpus/ in the ordinary test suite.
//
// The bytes are written to a scratch file and read with the explicit format (the readers take a
// path; HDF5 can only read files). The properties:
//   - a damaged file is refused with FormatError; any other exception, a crash, a sanitizer report,
//     or an allocation beyond libFuzzer's -malloc_limit_mb is a finding;
//   - format detection and reading with it also end in a result or a FormatError;
//   - an accepted set is finite and has unique ids (what readSnapshot promises);
//   - writing it back in a format that keeps ids either gives a FormatError (a value that the format
//     cannot hold) or a file that reads back to the same ids, time and values.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "common/errors.h"
#include "host/io/snapshot.h"

/// LeakSanitizer suppressions for a program that reads damaged HDF5 files: libhdf5 1.10 leaks a few
/// hundred bytes of a damaged object header when H5Gopen2 or H5Dopen2 fails on it (the failed call
/// returns no handle, so nothing of octwalk's can free it). A handle octwalk failed to close would not be
/// hidden by this: HDF5 keeps open objects reachable from its id tables, which LeakSanitizer does not
/// report. Define once per program: `OCTWALK_LSAN_SUPPRESS_LIBHDF5_LEAKS`.
#define OCTWALK_LSAN_SUPPRESS_LIBHDF5_LEAKS                                                                            \
    extern "C" const char* __lsan_default_suppressions() { return "leak:libhdf5\n"; }

namespace octwalk::fuzz {

/// An input that breaks a property (as opposed to one refused with a clear error).
class PropertyViolation : public std::logic_error
{
public:
    using std::logic_error::logic_error;
};

/// A private directory under the system temporary directory, removed on destruction.
class ScratchDirectory
{
public:
    explicit ScratchDirectory(const std::string& tag)
    {
        std::string pattern = (std::filesystem::temp_directory_path() / ("octwalk_fuzz_" + tag + "_XXXXXX")).string();
        if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
        path_ = pattern;
    }
    ~ScratchDirectory()
    {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    ScratchDirectory(const ScratchDirectory&)            = delete;
    ScratchDirectory& operator=(const ScratchDirectory&) = delete;

    const std::filesystem::path& path() const { return path_; }
    std::string file(const std::string& name) const { return (path_ / name).string(); }

private:
    std::filesystem::path path_;
};

inline void writeFile(const std::string& path, const uint8_t* data, size_t size)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
    if (!out) throw std::runtime_error("cannot write the fuzz input to " + path);
}

inline void require(bool condition, const std::string& what)
{
    if (!condition) throw PropertyViolation(what);
}

/// Indices of p in id order.
inline std::vector<size_t> idOrder(const ParticleSet& p)
{
    std::vector<size_t> order(p.id.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p.id[a] < p.id[b]; });
    return order;
}

inline void checkAccepted(const ParticleSet& p)
{
    const size_t n = p.pos.size();
    require(p.vel.size() == n && p.mass.size() == n && p.id.size() == n, "arrays of different lengths");
    require(std::isfinite(p.time), "non-finite time accepted");
    for (size_t i = 0; i < n; ++i)
    {
        const Vec3d& x = p.pos[i];
        const Vec3d& v = p.vel[i];
        require(std::isfinite(x.x) && std::isfinite(x.y) && std::isfinite(x.z) && std::isfinite(v.x) &&
                    std::isfinite(v.y) && std::isfinite(v.z) && std::isfinite(p.mass[i]),
                "particle " + std::to_string(i) + " accepted with a non-finite value");
    }
    const std::vector<size_t> order = idOrder(p);
    for (size_t k = 1; k < n; ++k) require(p.id[order[k]] != p.id[order[k - 1]], "duplicate id accepted");
    require(p.type.size() == n, "types missing");
    for (uint8_t t : p.type) require(t < 6, "type " + std::to_string(int(t)) + " accepted");
    for (size_t i = 0; i < n && p.boxSize > 0; ++i)
    {
        for (double c : {p.pos[i].x, p.pos[i].y, p.pos[i].z})
        {
            require(c >= 0 && c < p.boxSize, "particle " + std::to_string(i) + " accepted outside the box");
        }
    }
}

/// a and b hold the same ids with the same values (compared in float32 when `narrow`).
inline void checkSame(const ParticleSet& a, const ParticleSet& b, bool narrow)
{
    require(a.size() == b.size(),
            "write-back changed N from " + std::to_string(a.size()) + " to " + std::to_string(b.size()));
    require(a.time == b.time, "write-back changed the time");
    require(a.boxSize == b.boxSize && a.cosmology.has_value() == b.cosmology.has_value(),
            "write-back changed the box or the cosmology");
    auto same                    = [narrow](double x, double y) { return narrow ? float(x) == float(y) : x == y; };
    const std::vector<size_t> oa = idOrder(a), ob = idOrder(b);
    for (size_t k = 0; k < oa.size(); ++k)
    {
        const size_t i = oa[k], j = ob[k];
        require(a.id[i] == b.id[j], "write-back changed the ids");
        const bool ok = same(a.pos[i].x, b.pos[j].x) && same(a.pos[i].y, b.pos[j].y) && same(a.pos[i].z, b.pos[j].z) &&
                        same(a.vel[i].x, b.vel[j].x) && same(a.vel[i].y, b.vel[j].y) && same(a.vel[i].z, b.vel[j].z) &&
                        same(a.mass[i], b.mass[j]);
        require(ok, "write-back changed the values of id " + std::to_string(a.id[i]));
        require(a.type[i] == b.type[j], "write-back changed the type of id " + std::to_string(a.id[i]));
    }
}

/// One fuzz input for the reader of `format`, in `scratch`.
inline void snapshotInput(const uint8_t* data, size_t size, SnapshotFormat format, const ScratchDirectory& scratch)
{
    const std::string in = scratch.file("input"), out = scratch.file("output");
    writeFile(in, data, size);

    // Detection and the detected reader: a result or a FormatError, nothing else.
    try
    {
        checkAccepted(readSnapshot(in));
    }
    catch (const FormatError&)
    {}

    const bool tipsy = format == SnapshotFormat::TipsyStandard || format == SnapshotFormat::TipsyNative ||
                       format == SnapshotFormat::TipsyBonsai;
    if (tipsy)
    {
        try
        {
            checkAccepted(readSnapshot(in, SnapshotFormat::TipsyBonsai)); // refused unless the header says Bonsai
        }
        catch (const FormatError&)
        {}
    }

    ParticleSet p;
    try
    {
        p = readSnapshot(in, format);
    }
    catch (const FormatError&)
    {
        return;
    }
    checkAccepted(p);

    // TIPSY is written back as Bonsai TIPSY, the TIPSY that keeps ids: of dark and star records only,
    // so gas bodies go back as dark (types are checked by tests/app/test_gadget_cosmo.cpp, not here).
    const SnapshotFormat again = tipsy ? SnapshotFormat::TipsyBonsai : format;
    if (tipsy) std::replace(p.type.begin(), p.type.end(), uint8_t(0), uint8_t(1));
    try
    {
        writeSnapshot(out, again, p, SnapshotMeta{}, true);
    }
    catch (const FormatError&)
    {
        return; // e.g. a float64 GADGET-2 value beyond float32, which the writer stores
    }
    checkSame(p, readSnapshot(out, again), again != SnapshotFormat::Hdf5);
}

} // namespace octwalk::fuzz
