// HDF5 snapshots in a build without the HDF5 library: every other format still works.
#include "host/io/binary_io.h"
#include "common/errors.h"

namespace octwalk::io {

namespace {

[[noreturn]] void missing(const std::string& path)
{
    throw FormatError("'" + path + "': this octwalk was built without HDF5 (install libhdf5-dev and rebuild)");
}

} // namespace

void writeHdf5(const std::string& path, const ParticleSet&, const SnapshotMeta&,
               const std::function<void(const void*, size_t)>&)
{
    missing(path);
}

ParticleSet readHdf5(const std::string& path, const SnapshotReadOptions&) { missing(path); }

} // namespace octwalk::io
