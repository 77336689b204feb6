/// @file snapshot_hdf5.cpp
/// GADGET-style HDF5 snapshots (GADGET-3/4, SWIFT; read by yt and pynbody), through the HDF5 C API.
///
/// Written: /Header (attributes of FORMATS.md and the Flag_* of GADGET: for an isolated set
/// Omega0 = OmegaLambda = 0, so readers treat Time as plain time; for a cosmological one Time = a,
/// Redshift = 1/a - 1, BoxSize, Omega0, OmegaLambda, HubbleParam, and velocities u = v_pec / sqrt(a)),
/// one /PartTypeN per type present (Coordinates, Velocities: N x 3 float64; ParticleIDs: N uint64;
/// Masses: N float64 unless all bodies of the type have one mass, which then is MassTable[N]),
/// /Parameters (the run's JSON, the version and G) and /Units. All file types are explicit
/// little-endian, and object modification times are not recorded, so writing the same particles twice
/// gives the same bytes. Files use the HDF5 1.8 format (readable by HDF5 >= 1.8, h5py, yt, pynbody):
/// its object headers carry checksums, so damaged metadata is refused by HDF5 instead of being
/// decoded (mutation testing of the 1.10.8 reader found memory errors on unchecksummed headers).
///
/// The file is built in memory (HDF5's core driver, no backing store) and written by the caller through
/// the atomic writer, so HDF5 never writes to a disk itself: HDF5 1.10 cannot recover from a failed write
/// of its own (on a full disk its file stays open half-closed and crashes the process at exit). Writing
/// a snapshot holds the whole file in memory (besides a copy of the particles of one type at a time).
///
/// Errors name the file and the HDF5 object (e.g. /PartType1/Coordinates); the HDF5 library does not
/// expose byte offsets of its metadata, so an offset is given only for values in contiguous datasets.

#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "host/io/binary_io.h"
#include "common/errors.h"
#include "host/io/snapshot.h"

namespace octwalk::io {

namespace {

static_assert(sizeof(Vec3d) == 3 * sizeof(double), "Coordinates are written straight from Vec3d arrays");

/// An HDF5 identifier, closed with its own close function when it goes out of scope.
class Handle
{
public:
    using Closer = herr_t (*)(hid_t);

    Handle(hid_t id, Closer close) : id_(id), close_(close) {}
    Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)), close_(other.close_) {}
    Handle(const Handle&)            = delete;
    Handle& operator=(const Handle&) = delete;
    Handle& operator=(Handle&&)      = delete;
    ~Handle() { close(); }

    operator hid_t() const { return id_; }
    bool valid() const { return id_ >= 0; }

    /// Closes now; false when HDF5 reports a failure (for a file: the final flush failed).
    bool close()
    {
        const hid_t id = std::exchange(id_, H5I_INVALID_HID);
        return id < 0 || close_(id) >= 0;
    }

private:
    hid_t id_;
    Closer close_;
};

/// HDF5 prints its error stack to stderr by default; here every failure becomes a FormatError with our
/// own message, so the printing is switched off from the first snapshot read or written on, and stays
/// off: HDF5 also prints when it closes, at exit, the objects that a failed open left behind (its stack
/// and "infinite loop closing library"), long after a scoped switch would have been restored.
class QuietErrors
{
public:
    QuietErrors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }
    QuietErrors(const QuietErrors&)            = delete;
    QuietErrors& operator=(const QuietErrors&) = delete;
};

/// The innermost message of the HDF5 error stack (e.g. "truncated file: eof = ..."), which says more
/// than the outer "unable to open file".
std::string hdf5Reason()
{
    std::string reason;
    H5Ewalk2(
        H5E_DEFAULT, H5E_WALK_UPWARD,
        [](unsigned, const H5E_error2_t* error, void* data) -> herr_t {
            auto* r = static_cast<std::string*>(data);
            if (r->empty() && error->desc != nullptr) *r = error->desc;
            return 0;
        },
        &reason);
    // Some of HDF5's descriptions span lines (a failed read lists its arguments); errors are one line.
    std::replace(reason.begin(), reason.end(), '\n', ' ');
    return reason.empty() ? "no reason given by HDF5" : reason;
}

[[noreturn]] void failObject(const std::string& path, const std::string& object, const std::string& problem)
{
    throw FormatError("snapshot '" + path + "': field '" + object + "' (HDF5 object): " + problem);
}

/// The memory of HDF5's core driver, kept when HDF5 closes the file instead of freed: the finished file,
/// superblock included (H5Fget_file_image of HDF5 1.10 copies the superblock with a wrong checksum).
struct CoreImage
{
    void* memory    = nullptr;
    size_t capacity = 0;

    CoreImage()                            = default;
    CoreImage(const CoreImage&)            = delete;
    CoreImage& operator=(const CoreImage&) = delete;
    ~CoreImage() { std::free(memory); }

    /// The end of the file that the superblock records: the core driver's memory grows in steps and is not
    /// cut back at the close (which also gives back space at the end), as a file on disk is.
    size_t fileSize(const std::string& path) const
    {
        // Superblock version 2 (the HDF5 1.8 format, 8-byte addresses): signature, version, address and
        // length sizes, flags, then the base, extension and end-of-file addresses.
        constexpr size_t versionAt = 8, offsetSizeAt = 9, endAt = 28, superblockBytes = 48;
        const auto* bytes = static_cast<const unsigned char*>(memory);
        uint64_t end      = 0;
        if (capacity >= superblockBytes && bytes[versionAt] == 2 && bytes[offsetSizeAt] == 8)
        {
            for (int k = 7; k >= 0; --k) end = end << 8 | bytes[endAt + size_t(k)];
        }
        if (end < superblockBytes || end > capacity)
        {
            failObject(path, "/",
                       "HDF5 wrote a superblock without a valid end of file (" + std::to_string(end) + " in " +
                           std::to_string(capacity) + " bytes)");
        }
        return size_t(end);
    }

    H5FD_file_image_callbacks_t callbacks()
    {
        H5FD_file_image_callbacks_t c{};
        c.image_malloc = [](size_t size, H5FD_file_image_op_t, void* self) -> void* {
            static_cast<CoreImage*>(self)->capacity = size;
            return std::malloc(size);
        };
        c.image_memcpy = [](void* to, const void* from, size_t size, H5FD_file_image_op_t, void*) -> void* {
            return std::memcpy(to, from, size);
        };
        c.image_realloc = [](void* block, size_t size, H5FD_file_image_op_t, void* self) -> void* {
            static_cast<CoreImage*>(self)->capacity = size;
            return std::realloc(block, size);
        };
        c.image_free = [](void* block, H5FD_file_image_op_t op, void* self) -> herr_t {
            auto* image = static_cast<CoreImage*>(self);
            if (op != H5FD_FILE_IMAGE_OP_FILE_CLOSE || block == nullptr) return std::free(block), 0;
            std::free(image->memory);
            image->memory = block;
            return 0;
        };
        c.udata_copy = [](void* self) -> void* { return self; };
        c.udata_free = [](void*) -> herr_t { return 0; };
        c.udata      = this;
        return c;
    }
};

// ---------------------------------------------------------------------------------------------
// Writing

class Hdf5Writer
{
public:
    explicit Hdf5Writer(const std::string& path) : path_(path) {}

    void check(herr_t status, const std::string& object) const
    {
        if (status < 0) failObject(path_, object, "HDF5 cannot write it: " + hdf5Reason());
    }

    Handle created(hid_t id, Handle::Closer close, const std::string& object) const
    {
        if (id < 0) failObject(path_, object, "HDF5 cannot create it: " + hdf5Reason());
        return Handle(id, close);
    }

    /// A creation property list that records no modification time, so output is reproducible.
    Handle untimed(hid_t propertyClass, const std::string& object) const
    {
        Handle list = created(H5Pcreate(propertyClass), H5Pclose, object);
        check(H5Pset_obj_track_times(list, false), object);
        return list;
    }

    Handle group(hid_t parent, const std::string& name) const
    {
        Handle gcpl = untimed(H5P_GROUP_CREATE, "/" + name);
        return created(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, gcpl, H5P_DEFAULT), H5Gclose, "/" + name);
    }

    /// `count` values (0: a scalar) of memType from `data`, stored as fileType.
    void attribute(hid_t location, const std::string& object, const char* name, hid_t fileType, hid_t memType,
                   const void* data, hsize_t count = 0) const
    {
        const std::string field = object + "/" + name;
        const hid_t shape       = count == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &count, nullptr);
        Handle space            = created(shape, H5Sclose, field);
        Handle attr = created(H5Acreate2(location, name, fileType, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose, field);
        check(H5Awrite(attr, memType, data), field);
    }

    void stringAttribute(hid_t location, const std::string& object, const char* name, const std::string& value) const
    {
        const std::string field = object + "/" + name;
        // Fixed-length, NUL-padded: deterministic bytes, and read by h5py as bytes. HDF5 has no 0-length string.
        Handle type = created(H5Tcopy(H5T_C_S1), H5Tclose, field);
        check(H5Tset_size(type, std::max<size_t>(1, value.size())), field);
        check(H5Tset_strpad(type, H5T_STR_NULLPAD), field);
        std::string padded = value;
        padded.resize(std::max<size_t>(1, value.size()), '\0');
        attribute(location, object, name, type, type, padded.data());
    }

    void dataset(hid_t group, const std::string& object, const char* name, hid_t fileType, hid_t memType, hsize_t rows,
                 hsize_t columns, const void* data) const
    {
        const std::string field = object + "/" + name;
        const hsize_t dims[2]   = {rows, columns};
        Handle space            = created(H5Screate_simple(columns == 1 ? 1 : 2, dims, nullptr), H5Sclose, field);
        Handle dcpl             = untimed(H5P_DATASET_CREATE, field);
        Handle set = created(H5Dcreate2(group, name, fileType, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose, field);
        check(H5Dwrite(set, memType, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), field);
    }

    const std::string& path() const { return path_; }

private:
    std::string path_;
};

/// The bodies of each type, in id order, and their shared mass (0 when they have several).
struct TypeGroups
{
    std::vector<size_t> members[numParticleTypes];
    double mass[numParticleTypes] = {};
};

TypeGroups typeGroups(const ParticleSet& sorted)
{
    TypeGroups g;
    for (size_t i = 0; i < sorted.type.size(); ++i) g.members[sorted.type[i]].push_back(i);
    for (int t = 0; t < numParticleTypes; ++t)
    {
        const std::vector<size_t>& m = g.members[t];
        const bool shared            = !m.empty() && std::all_of(m.begin(), m.end(), [&](size_t i) {
            return sorted.mass[i] == sorted.mass[m.front()];
        });
        g.mass[t]                    = shared ? sorted.mass[m.front()] : 0.0;
    }
    return g;
}

void writeHeader(const Hdf5Writer& w, hid_t file, const ParticleSet& sorted, const TypeGroups& groups)
{
    Handle header                       = w.group(file, "Header");
    uint32_t thisFile[numParticleTypes] = {}, total[numParticleTypes] = {}, highWord[numParticleTypes] = {};
    for (int t = 0; t < numParticleTypes; ++t)
    {
        const CountWords words = splitCount(groups.members[t].size());
        thisFile[t]            = words.low;
        total[t]               = words.low;
        highWord[t]            = words.high;
    }
    const std::optional<Cosmology>& c = sorted.cosmology;
    const double time = sorted.time, box = sorted.boxSize;
    const double redshift    = c ? 1.0 / sorted.time - 1.0 : 0.0;
    const double omega0      = c ? c->omega0 : 0.0; // isolated: yt then reads Time as time
    const double omegaLambda = c ? c->omegaLambda : 0.0;
    const double hubble      = c ? c->hubbleParam : 1.0; // h = 1 divides nothing
    const int32_t files = 1, off = 0, doublePrecision = 1;

    const std::string h = "/Header";
    w.attribute(header, h, "NumPart_ThisFile", H5T_STD_U32LE, H5T_NATIVE_UINT32, thisFile, numParticleTypes);
    w.attribute(header, h, "NumPart_Total", H5T_STD_U32LE, H5T_NATIVE_UINT32, total, numParticleTypes);
    w.attribute(header, h, "NumPart_Total_HighWord", H5T_STD_U32LE, H5T_NATIVE_UINT32, highWord, numParticleTypes);
    w.attribute(header, h, "MassTable", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, groups.mass, numParticleTypes);
    w.attribute(header, h, "Time", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &time);
    w.attribute(header, h, "Redshift", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &redshift);
    w.attribute(header, h, "BoxSize", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &box);
    w.attribute(header, h, "NumFilesPerSnapshot", H5T_STD_I32LE, H5T_NATIVE_INT32, &files);
    w.attribute(header, h, "Omega0", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &omega0);
    w.attribute(header, h, "OmegaLambda", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &omegaLambda);
    w.attribute(header, h, "HubbleParam", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &hubble);
    for (const char* flag :
         {"Flag_Sfr", "Flag_Cooling", "Flag_Feedback", "Flag_StellarAge", "Flag_Metals", "Flag_Entropy_ICs"})
    {
        w.attribute(header, h, flag, H5T_STD_I32LE, H5T_NATIVE_INT32, &off);
    }
    w.attribute(header, h, "Flag_DoublePrecision", H5T_STD_I32LE, H5T_NATIVE_INT32, &doublePrecision);
}

void writeParameters(const Hdf5Writer& w, hid_t file, const SnapshotMeta& meta)
{
    Handle parameters = w.group(file, "Parameters");
    w.stringAttribute(parameters, "/Parameters", "ParametersJson", meta.parametersJson);
    w.stringAttribute(parameters, "/Parameters", "Version", meta.version);
    w.attribute(parameters, "/Parameters", "GravitationalConstant", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                &meta.gravitationalConstant);
}

/// An N-body run has no physical scale, but tools such as yt need cgs units. We state the one system
/// with length 1 kpc and velocity 1 km/s in which G has the run's value: the mass unit then follows
/// (G = 1 gives 2.325e5 Msun; G = 43007.1 gives GADGET's 1e10 Msun), and any rescaling of the run is a
/// rescaling of these three numbers.
void writeUnits(const Hdf5Writer& w, hid_t file, const SnapshotMeta& meta)
{
    constexpr double kpcInCm          = 3.0856775814913673e21;
    constexpr double kmPerSInCmPerS   = 1.0e5;
    constexpr double gravitationalCgs = 6.67430e-8; // CODATA 2018, cm^3 g^-1 s^-2
    const double massInG = meta.gravitationalConstant * kpcInCm * kmPerSInCmPerS * kmPerSInCmPerS / gravitationalCgs;
    Handle units         = w.group(file, "Units");
    w.attribute(units, "/Units", "UnitLength_in_cm", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &kpcInCm);
    w.attribute(units, "/Units", "UnitMass_in_g", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &massInG);
    w.attribute(units, "/Units", "UnitVelocity_in_cm_per_s", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &kmPerSInCmPerS);
}

/// /PartType<t>: the bodies of type t in id order, velocities as the file stores them.
void writeType(const Hdf5Writer& w, hid_t file, const ParticleSet& sorted, const TypeGroups& groups, int t)
{
    const std::vector<size_t>& members = groups.members[t];
    const hsize_t n                    = hsize_t(members.size());
    const double toFile                = velocityToFile(sorted);
    std::vector<Vec3d> pos(n), vel(n);
    std::vector<double> mass(n);
    std::vector<uint64_t> ids(n);
    for (size_t k = 0; k < n; ++k)
    {
        const size_t i = members[k];
        const Vec3d& v = sorted.vel[i];
        pos[k]         = sorted.pos[i];
        vel[k]         = {v.x * toFile, v.y * toFile, v.z * toFile};
        if (!(std::isfinite(vel[k].x) && std::isfinite(vel[k].y) && std::isfinite(vel[k].z)))
        {
            failObject(w.path(), "/PartType" + std::to_string(t) + "/Velocities",
                       "particle id " + std::to_string(sorted.id[i]) + ": its velocity / sqrt(a) overflows");
        }
        mass[k] = sorted.mass[i];
        ids[k]  = sorted.id[i];
    }
    const std::string name = "PartType" + std::to_string(t);
    Handle group           = w.group(file, name);
    const std::string g    = "/" + name;
    w.dataset(group, g, "Coordinates", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, n, 3, pos.data());
    w.dataset(group, g, "Velocities", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, n, 3, vel.data());
    if (groups.mass[t] == 0.0) w.dataset(group, g, "Masses", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, n, 1, mass.data());
    w.dataset(group, g, "ParticleIDs", H5T_STD_U64LE, H5T_NATIVE_UINT64, n, 1, ids.data());
}

// ---------------------------------------------------------------------------------------------
// Reading

/// Deflate cannot expand data more than about 1032-fold, so a filtered dataset whose shape needs
/// more than this per stored byte is damaged, and is refused before its buffer is allocated.
constexpr uint64_t maxInflation   = 1032;
constexpr uint64_t inflationSlack = uint64_t(1) << 16;

class Hdf5Reader
{
public:
    Hdf5Reader(const std::string& path, uint64_t fileSize) : path_(path), fileSize_(fileSize) {}

    [[noreturn]] void fail(const std::string& object, const std::string& problem) const
    {
        failObject(path_, object, problem);
    }

    /// The answer of H5Lexists / H5Aexists; a damaged object header (say, a failed checksum) is an
    /// error of its own, not "missing".
    bool exists(htri_t answer, const std::string& field) const
    {
        if (answer < 0) fail(field, "cannot be read: " + hdf5Reason());
        return answer > 0;
    }

    Handle openGroup(hid_t file, const std::string& name) const
    {
        if (!exists(H5Lexists(file, name.c_str(), H5P_DEFAULT), "/" + name)) fail("/" + name, "missing");
        Handle group(H5Gopen2(file, name.c_str(), H5P_DEFAULT), H5Gclose);
        if (!group.valid()) fail("/" + name, "cannot be opened as a group: " + hdf5Reason());
        return group;
    }

    /// `count` values of an attribute (a scalar when count is 1), converted by HDF5 to memType.
    template<class T>
    std::vector<T> attribute(hid_t location, const std::string& object, const char* name, hid_t memType,
                             hssize_t count) const
    {
        const std::string field = object + "/" + name;
        if (!exists(H5Aexists(location, name), field)) fail(field, "missing");
        Handle attr(H5Aopen(location, name, H5P_DEFAULT), H5Aclose);
        Handle space(H5Aget_space(attr), H5Sclose);
        if (!attr.valid() || !space.valid()) fail(field, "cannot be opened: " + hdf5Reason());
        const hssize_t found = H5Sget_simple_extent_npoints(space);
        if (found != count)
        {
            fail(field, "has " + std::to_string(found) + " values, expected " + std::to_string(count));
        }
        std::vector<T> values(static_cast<size_t>(count));
        if (H5Aread(attr, memType, values.data()) < 0) fail(field, "cannot be read as a number: " + hdf5Reason());
        return values;
    }

    /// Where the values of a dataset start in the file, for error messages (contiguous layout only).
    struct Located
    {
        haddr_t address   = HADDR_UNDEF;
        size_t valueBytes = 0;

        std::string at(uint64_t index) const
        {
            if (address == HADDR_UNDEF) return "(no single byte offset: chunked dataset)";
            return "at byte offset " + std::to_string(uint64_t(address) + index * valueBytes);
        }
    };

    /// rows x columns values of dataset `name`, converted by HDF5 to memType, after its shape, class and
    /// stored size are checked against what the header promises and the size of the file.
    template<class T>
    std::vector<T> dataset(hid_t group, const std::string& object, const char* name, uint64_t rows, hsize_t columns,
                           hid_t memType, H5T_class_t valueClass, Located& located) const
    {
        const std::string field = object + "/" + name;
        if (!exists(H5Lexists(group, name, H5P_DEFAULT), field)) fail(field, "missing");
        Handle set(H5Dopen2(group, name, H5P_DEFAULT), H5Dclose);
        if (!set.valid()) fail(field, "cannot be opened as a dataset: " + hdf5Reason());
        Handle space(H5Dget_space(set), H5Sclose);
        Handle type(H5Dget_type(set), H5Tclose);
        Handle dcpl(H5Dget_create_plist(set), H5Pclose);
        if (!space.valid() || !type.valid() || !dcpl.valid()) fail(field, "cannot be inspected: " + hdf5Reason());

        checkShape(space, field, rows, columns);
        if (H5Tget_class(type) != valueClass)
        {
            fail(field, valueClass == H5T_FLOAT ? "is not floating point" : "is not an integer type");
        }
        const size_t valueBytes = H5Tget_size(type);
        checkStorage(set, dcpl, field, rows * columns * valueBytes);

        std::vector<T> values(rows * columns);
        if (H5Dread(set, memType, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0)
        {
            fail(field, "cannot be read: " + hdf5Reason());
        }
        located.address    = H5Dget_offset(set);
        located.valueBytes = valueBytes;
        return values;
    }

    /// ParticleIDs as uint64; signed ids are read as int64 and refused when negative.
    std::vector<uint64_t> ids(hid_t group, const std::string& object, uint64_t rows) const
    {
        const std::string field = object + "/ParticleIDs";
        Located located;
        const bool isSigned = datasetIsSigned(group, field);
        std::vector<uint64_t> values =
            dataset<uint64_t>(group, object, "ParticleIDs", rows, 1, isSigned ? H5T_NATIVE_INT64 : H5T_NATIVE_UINT64,
                              H5T_INTEGER, located);
        for (uint64_t i = 0; i < rows && isSigned; ++i)
        {
            const int64_t id = static_cast<int64_t>(values[i]);
            if (id < 0)
            {
                fail(field,
                     "entry " + std::to_string(i) + " is the negative id " + std::to_string(id) + " " + located.at(i));
            }
        }
        return values;
    }

private:
    void checkShape(hid_t space, const std::string& field, uint64_t rows, hsize_t columns) const
    {
        const int rank    = H5Sget_simple_extent_ndims(space);
        hsize_t dims[2]   = {0, 0};
        const bool shaped = (columns == 1 && rank == 1) || (columns > 1 && rank == 2);
        if (shaped) H5Sget_simple_extent_dims(space, dims, nullptr);
        if (!shaped || dims[0] != rows || (columns > 1 && dims[1] != columns))
        {
            fail(field, "has rank " + std::to_string(rank) + " and " + std::to_string(dims[0]) +
                            " rows; /Header/NumPart_ThisFile says " + std::to_string(rows) + " rows of " +
                            std::to_string(columns));
        }
    }

    void checkStorage(hid_t set, hid_t dcpl, const std::string& field, uint64_t logicalBytes) const
    {
        const uint64_t stored = H5Dget_storage_size(set);
        if (stored > fileSize_)
        {
            fail(field, "claims " + std::to_string(stored) + " stored bytes in a file of " + std::to_string(fileSize_));
        }
        const bool filtered = H5Pget_nfilters(dcpl) > 0;
        if (!filtered && stored != logicalBytes)
        {
            fail(field,
                 "stores " + std::to_string(stored) + " bytes but its shape needs " + std::to_string(logicalBytes));
        }
        if (filtered && logicalBytes > maxInflation * stored + inflationSlack)
        {
            fail(field, "needs " + std::to_string(logicalBytes) + " bytes from " + std::to_string(stored) +
                            " compressed ones, more than deflate can give");
        }
    }

    bool datasetIsSigned(hid_t group, const std::string& field) const
    {
        if (!exists(H5Lexists(group, "ParticleIDs", H5P_DEFAULT), field)) fail(field, "missing");
        Handle set(H5Dopen2(group, "ParticleIDs", H5P_DEFAULT), H5Dclose);
        Handle type(set.valid() ? H5Dget_type(set) : H5I_INVALID_HID, H5Tclose);
        if (!type.valid()) fail(field, "cannot be opened as a dataset: " + hdf5Reason());
        return H5Tget_class(type) == H5T_INTEGER && H5Tget_sign(type) == H5T_SGN_2;
    }

    std::string path_;
    uint64_t fileSize_;
};

struct Hdf5Header
{
    std::vector<int64_t> numPart;
    std::vector<double> massTable;
    FrameHeader frame;
    /// Where Omega0, OmegaLambda and HubbleParam were read: "/Header", or "/Parameters" (GADGET-4).
    std::string cosmologyGroup = "/Header";
};

/// An optional scalar attribute of `object` (/Header, /Parameters); `absent` when the file has none.
/// BoxSize may also be a 3-vector (SWIFT): a cube's three equal sides.
double optionalReal(const Hdf5Reader& r, hid_t group, const std::string& object, const char* name, double absent)
{
    const std::string field = object + "/" + name;
    if (!r.exists(H5Aexists(group, name), field)) return absent;
    Handle attr(H5Aopen(group, name, H5P_DEFAULT), H5Aclose);
    Handle space(attr.valid() ? H5Aget_space(attr) : H5I_INVALID_HID, H5Sclose);
    if (!space.valid()) r.fail(field, "cannot be opened: " + hdf5Reason());
    const hssize_t count = H5Sget_simple_extent_npoints(space);
    if (count == 3 && std::string(name) == "BoxSize")
    {
        const std::vector<double> sides = r.attribute<double>(group, object, name, H5T_NATIVE_DOUBLE, 3);
        if (!(sides[0] == sides[1] && sides[1] == sides[2]))
        {
            r.fail(field, "the sides " + std::to_string(sides[0]) + ", " + std::to_string(sides[1]) + ", " +
                              std::to_string(sides[2]) + " are not a cube");
        }
        return sides[0];
    }
    return r.attribute<double>(group, object, name, H5T_NATIVE_DOUBLE, 1)[0];
}

/// NumPart_Total with its high words must equal NumPart_ThisFile in a single-file snapshot.
void checkTotals(const Hdf5Reader& r, hid_t group, const Hdf5Header& header)
{
    const std::string h = "/Header";
    if (!r.exists(H5Aexists(group, "NumPart_Total"), h + "/NumPart_Total")) return;
    const std::vector<uint32_t> low =
        r.attribute<uint32_t>(group, h, "NumPart_Total", H5T_NATIVE_UINT32, numParticleTypes);
    std::vector<uint32_t> high(numParticleTypes, 0);
    if (r.exists(H5Aexists(group, "NumPart_Total_HighWord"), h + "/NumPart_Total_HighWord"))
    {
        high = r.attribute<uint32_t>(group, h, "NumPart_Total_HighWord", H5T_NATIVE_UINT32, numParticleTypes);
    }
    for (int t = 0; t < numParticleTypes; ++t)
    {
        const uint64_t total = joinCount(low[t], high[t]);
        if (total != uint64_t(header.numPart[t]))
        {
            r.fail(h + "/NumPart_Total[" + std::to_string(t) + "]",
                   "is " + std::to_string(total) + " (with NumPart_Total_HighWord) but NumPart_ThisFile[" +
                       std::to_string(t) + "] is " + std::to_string(header.numPart[t]) + " in a single-file snapshot");
        }
    }
}

/// Omega0, OmegaLambda and HubbleParam from /Header (GADGET-2 and -3, SWIFT, octwalk), or where /Header has
/// none of them from /Parameters, where GADGET-4 keeps them (its /Header holds only Time, Redshift and
/// BoxSize of the frame). A GADGET-4 run with ComovingIntegrationOn = 0 is not cosmological whatever its
/// Omega0: its values are not taken. Absent everywhere: 0, 0 and 1 (an isolated file).
void readCosmology(const Hdf5Reader& r, hid_t file, hid_t headerGroup, Hdf5Header& header)
{
    const std::string h = "/Header";
    const char* names[] = {"Omega0", "OmegaLambda", "HubbleParam"};
    bool inHeader       = false;
    for (const char* name : names) inHeader = inHeader || r.exists(H5Aexists(headerGroup, name), h + "/" + name);
    FrameHeader& f = header.frame;
    if (inHeader || !r.exists(H5Lexists(file, "Parameters", H5P_DEFAULT), "/Parameters"))
    {
        f.omega0      = optionalReal(r, headerGroup, h, "Omega0", 0.0);
        f.omegaLambda = optionalReal(r, headerGroup, h, "OmegaLambda", 0.0);
        f.hubbleParam = optionalReal(r, headerGroup, h, "HubbleParam", 1.0);
        return;
    }
    const std::string p = "/Parameters";
    Handle parameters   = r.openGroup(file, "Parameters");
    f.hubbleParam       = 1.0;
    if (optionalReal(r, parameters, p, "ComovingIntegrationOn", 1.0) == 0.0) return;
    f.omega0      = optionalReal(r, parameters, p, "Omega0", 0.0);
    f.omegaLambda = optionalReal(r, parameters, p, "OmegaLambda", 0.0);
    f.hubbleParam = optionalReal(r, parameters, p, "HubbleParam", 1.0);
    if (f.omega0 != 0.0 || f.omegaLambda != 0.0) header.cosmologyGroup = p;
}

Hdf5Header readHeader(const Hdf5Reader& r, hid_t file)
{
    Handle group        = r.openGroup(file, "Header");
    const std::string h = "/Header";
    Hdf5Header header;
    header.numPart    = r.attribute<int64_t>(group, h, "NumPart_ThisFile", H5T_NATIVE_INT64, numParticleTypes);
    header.massTable  = r.attribute<double>(group, h, "MassTable", H5T_NATIVE_DOUBLE, numParticleTypes);
    header.frame.time = r.attribute<double>(group, h, "Time", H5T_NATIVE_DOUBLE, 1)[0];
    for (int t = 0; t < numParticleTypes; ++t)
    {
        const std::string index = "[" + std::to_string(t) + "]";
        if (header.numPart[t] < 0)
        {
            r.fail(h + "/NumPart_ThisFile" + index, "is negative: " + std::to_string(header.numPart[t]));
        }
        if (!(std::isfinite(header.massTable[t]) && header.massTable[t] >= 0.0))
        {
            r.fail(h + "/MassTable" + index, std::to_string(header.massTable[t]) + " is not finite and >= 0");
        }
    }
    if (!std::isfinite(header.frame.time))
    {
        r.fail(h + "/Time", std::to_string(header.frame.time) + " is not finite");
    }
    header.frame.boxSize = optionalReal(r, group, h, "BoxSize", 0.0);
    readCosmology(r, file, group, header);
    if (r.exists(H5Aexists(group, "NumFilesPerSnapshot"), h + "/NumFilesPerSnapshot"))
    {
        const int64_t files = r.attribute<int64_t>(group, h, "NumFilesPerSnapshot", H5T_NATIVE_INT64, 1)[0];
        if (files > 1)
        {
            r.fail(h + "/NumFilesPerSnapshot", "the snapshot is split over " + std::to_string(files) +
                                                   " files; reading one of them would silently drop particles");
        }
    }
    checkTotals(r, group, header);
    return header;
}

void checkFinite(const Hdf5Reader& r, const std::string& field, const std::vector<double>& values, size_t perParticle,
                 int64_t firstParticle, const Hdf5Reader::Located& located)
{
    for (size_t i = 0; i < values.size(); ++i)
    {
        if (!std::isfinite(values[i]))
        {
            r.fail(field, "particle " + std::to_string(firstParticle + int64_t(i / perParticle)) + " has the value " +
                              std::to_string(values[i]) + ", not finite, " + located.at(i));
        }
    }
}

/// Appends the particles of /PartType<t> to `out`.
void readType(const Hdf5Reader& r, hid_t file, const Hdf5Header& header, int t, ParticleSet& out)
{
    const uint64_t n = uint64_t(header.numPart[t]);
    if (n == 0) return;
    const std::string name = "PartType" + std::to_string(t);
    const std::string g    = "/" + name;
    Handle group           = r.openGroup(file, name);
    const int64_t first    = out.size();

    Hdf5Reader::Located located;
    const hid_t real              = H5T_NATIVE_DOUBLE;
    const std::vector<double> pos = r.dataset<double>(group, g, "Coordinates", n, 3, real, H5T_FLOAT, located);
    checkFinite(r, g + "/Coordinates", pos, 3, first, located);
    const std::vector<double> vel = r.dataset<double>(group, g, "Velocities", n, 3, real, H5T_FLOAT, located);
    checkFinite(r, g + "/Velocities", vel, 3, first, located);
    const std::vector<uint64_t> ids = r.ids(group, g, n);

    std::vector<double> mass;
    if (r.exists(H5Lexists(group, "Masses", H5P_DEFAULT), g + "/Masses"))
    {
        mass = r.dataset<double>(group, g, "Masses", n, 1, real, H5T_FLOAT, located);
        checkFinite(r, g + "/Masses", mass, 1, first, located);
    }
    else if (header.massTable[t] > 0.0)
    {
        mass.assign(n, header.massTable[t]);
    }
    else
    {
        r.fail(g + "/Masses", "missing, and /Header/MassTable[" + std::to_string(t) + "] is 0");
    }

    for (uint64_t i = 0; i < n; ++i)
    {
        out.pos.push_back({pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]});
        out.vel.push_back({vel[3 * i], vel[3 * i + 1], vel[3 * i + 2]});
    }
    out.mass.insert(out.mass.end(), mass.begin(), mass.end());
    out.id.insert(out.id.end(), ids.begin(), ids.end());
    out.type.insert(out.type.end(), size_t(n), uint8_t(t));
}

} // namespace

void writeHdf5(const std::string& path, const ParticleSet& sorted, const SnapshotMeta& meta,
               const std::function<void(const void* bytes, size_t size)>& write)
{
    if (uint64_t(sorted.size()) > std::numeric_limits<uint32_t>::max())
    {
        throw FormatError("snapshot '" + path + "': " + std::to_string(sorted.size()) +
                          " particles do not fit in /Header/NumPart_ThisFile (uint32)");
    }
    QuietErrors quiet;
    const Hdf5Writer w(path);
    CoreImage image; // outlives the file, whose close hands it the memory
    Handle fcpl = w.untimed(H5P_FILE_CREATE, "/");
    Handle fapl = w.created(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "/");
    w.check(H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V18), "/");
    // In memory only (no backing store): the name is never opened. Grown in steps of about the file's size.
    const size_t step = (size_t(1) << 20) + size_t(sorted.size()) * (sizeof(Vec3d) * 2 + sizeof(double) * 2);
    w.check(H5Pset_fapl_core(fapl, step, false), "/");
    H5FD_file_image_callbacks_t callbacks = image.callbacks();
    w.check(H5Pset_file_image_callbacks(fapl, &callbacks), "/");
    Handle file             = w.created(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl, fapl), H5Fclose, "/");
    const TypeGroups groups = typeGroups(sorted);
    writeHeader(w, file, sorted, groups);
    writeParameters(w, file, meta);
    writeUnits(w, file, meta);
    for (int t = 0; t < numParticleTypes; ++t)
    {
        if (!groups.members[t].empty()) writeType(w, file, sorted, groups, t); // GADGET writes no empty group
    }
    if (!file.close() || image.memory == nullptr) failObject(path, "/", "HDF5 cannot finish the file: " + hdf5Reason());
    write(image.memory, image.fileSize(path));
}

ParticleSet readHdf5(const std::string& path, const SnapshotReadOptions& options)
{
    FileReader probe(path);
    if (!hasHdf5Signature(probe)) probe.fail("HDF5 signature", 0, "not found: this is not an HDF5 file");

    QuietErrors quiet;
    Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!file.valid()) failObject(path, "/", "HDF5 cannot open the file: " + hdf5Reason());
    const Hdf5Reader reader(path, probe.size());
    const Hdf5Header header = readHeader(reader, file);

    ParticleSet p;
    p.time = header.frame.time;
    applyFrameHeader(header.frame, options.cosmology, p, [&](const std::string& field, const std::string& problem) {
        const bool cosmological = field == "Omega0" || field == "OmegaLambda" || field == "HubbleParam";
        reader.fail((cosmological ? header.cosmologyGroup : std::string("/Header")) + "/" + field, problem);
    });
    for (int t = 0; t < numParticleTypes; ++t) readType(reader, file, header, t, p);
    velocitiesFromFile(p, path);
    if (p.cosmology && header.cosmologyGroup != "/Header")
    {
        std::ostringstream s;
        s.precision(6);
        s << "'" << path << "': Omega0 = " << p.cosmology->omega0 << ", OmegaLambda = " << p.cosmology->omegaLambda
          << ", HubbleParam = " << p.cosmology->hubbleParam << " read from " << header.cosmologyGroup
          << " (GADGET-4 keeps them there): /Header/Time is the scale factor a = " << p.time
          << " and the stored velocities u = v / sqrt(a) were converted to peculiar velocities";
        snapshotNotice(options, s.str());
    }
    return p;
}

} // namespace octwalk::io
