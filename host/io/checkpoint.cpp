#include "host/io/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/errors.h"
#include "host/io/atomic_file.h"
#include "host/io/binary_io.h"

namespace octwalk {

namespace {

constexpr char kMagic[16]          = "OCTWALK-CKPT-v3";
constexpr char kMagicV2[16]        = "OCTWALK-CKPT-v2";
constexpr char kMagicV4[16]        = "OCTWALK-CKPT-v4";
constexpr char kMagicV5[16]        = "OCTWALK-CKPT-v5";
constexpr char kMagicV6[16]        = "OCTWALK-CKPT-v6";
constexpr char kMagicV7[16]        = "OCTWALK-CKPT-v7";
constexpr char kMagicV8[16]        = "OCTWALK-CKPT-v8";
constexpr char kMagicV1[16]        = "OCTWALK-CKPT-v1";
constexpr uint64_t kFnvOffsetBasis = 1469598103934665603ull;
constexpr uint64_t kFnvPrime       = 1099511628211ull;
/// Bytes of one body: position, velocity, mass, id.
constexpr uint64_t kBytesPerBody = 3 * 8 + 3 * 8 + 8 + 8;

/// FNV-1a of n more bytes, continuing from hash h.
uint64_t fnv1a(const void* data, size_t n, uint64_t h)
{
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i)
    {
        h ^= bytes[i];
        h *= kFnvPrime;
    }
    return h;
}

/// Bytes of one piece of version 8's checksum (checkpoint.h).
constexpr size_t kHashChunk = size_t(1) << 20;

/// Version 8's hash of one piece: FNV-1a's step over its 64-bit words (a last partial word padded with zero bytes),
/// each step followed by a shift that folds the high bits down, so that two changes in the same high bit of two
/// words do not cancel.
uint64_t chunkHash(const unsigned char* data, size_t n)
{
    uint64_t h      = kFnvOffsetBasis;
    size_t i        = 0;
    const auto step = [&h](uint64_t word) {
        h ^= word;
        h *= kFnvPrime;
        h ^= h >> 29;
    };
    for (; i + sizeof(uint64_t) <= n; i += sizeof(uint64_t))
    {
        uint64_t word;
        std::memcpy(&word, data + i, sizeof(word));
        step(word);
    }
    if (i < n)
    {
        uint64_t word = 0;
        std::memcpy(&word, data + i, n - i);
        step(word);
    }
    return h;
}

/// Version 8's checksum of a stream of bytes: the hashes of its pieces of kHashChunk bytes (the last one shorter),
/// taken in parallel where whole pieces arrive at once, then chunkHash of those hashes and the byte count. The same
/// value for any thread count and however the bytes are split among calls to add.
class ChunkedHash
{
public:
    void add(const unsigned char* data, size_t n)
    {
        bytes_ += n;
        if (!pending_.empty())
        {
            const size_t take = std::min(n, kHashChunk - pending_.size());
            pending_.insert(pending_.end(), data, data + take);
            data += take;
            n -= take;
            if (pending_.size() < kHashChunk) return;
            pieces_.push_back(chunkHash(pending_.data(), kHashChunk));
            pending_.clear();
        }
        const size_t whole = n / kHashChunk, first = pieces_.size();
        pieces_.resize(first + whole);
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < int64_t(whole); ++k)
            pieces_[first + size_t(k)] = chunkHash(data + size_t(k) * kHashChunk, kHashChunk);
        pending_.assign(data + whole * kHashChunk, data + n);
    }

    uint64_t value() const
    {
        std::vector<uint64_t> all = pieces_;
        if (!pending_.empty()) all.push_back(chunkHash(pending_.data(), pending_.size()));
        all.push_back(bytes_);
        return chunkHash(reinterpret_cast<const unsigned char*>(all.data()), all.size() * sizeof(uint64_t));
    }

private:
    std::vector<uint64_t> pieces_;
    std::vector<unsigned char> pending_;
    uint64_t bytes_ = 0;
};

/// The checksum of a stream of bytes as they pass: version 8's (chunked) or FNV-1a's byte by byte for the versions
/// before it.
class RunningHash
{
public:
    explicit RunningHash(bool chunked) : chunked_(chunked) {}

    void add(const void* data, size_t n)
    {
        if (chunked_) chunks_.add(static_cast<const unsigned char*>(data), n);
        else bytewise_ = fnv1a(data, n, bytewise_);
    }

    uint64_t value() const { return chunked_ ? chunks_.value() : bytewise_; }

private:
    bool chunked_;
    ChunkedHash chunks_;
    uint64_t bytewise_ = kFnvOffsetBasis;
};

/// Writes through an AtomicFile in the host's byte order, hashing every byte written.
class HashedWriter
{
public:
    HashedWriter(AtomicFile& file, bool chunked) : file_(file), hash_(chunked) {}

    void write(const void* data, size_t n)
    {
        hash_.add(data, n);
        file_.write(data, n);
    }

    template<class T>
    void put(const T& value)
    {
        static_assert(std::is_trivially_copyable_v<T>, "put needs a plain value type");
        write(&value, sizeof(T));
    }

    template<class T>
    void putArray(const std::vector<T>& values)
    {
        write(values.data(), values.size() * sizeof(T));
    }

    uint64_t hash() const { return hash_.value(); }

private:
    AtomicFile& file_;
    RunningHash hash_;
};

/// Whether the file's checksum (its last 8 bytes) is that of all bytes before it, read again from the start in
/// pieces: version 8's (chunked) or FNV-1a's.
bool checksumHolds(io::FileReader& in, bool chunked)
{
    const uint64_t n = in.size() - sizeof(uint64_t);
    // Whole pieces of the chunked hash at a time, so that they are hashed in parallel.
    std::vector<unsigned char> piece(size_t(std::min<uint64_t>(n, uint64_t(64) * kHashChunk)));
    RunningHash hash(chunked);
    in.watch(nullptr);
    in.seek(0);
    for (uint64_t done = 0; done < n;)
    {
        const uint64_t bytes = std::min<uint64_t>(piece.size(), n - done);
        in.read(piece.data(), bytes, "contents");
        hash.add(piece.data(), size_t(bytes));
        done += bytes;
    }
    return in.read<uint64_t>(io::hostByteOrder(), "checksum") == hash.value();
}

/// Version 2: the "name=value" lines of the parameter table, read back through the table.
void readParameters(io::FileReader& in, Parameters& p)
{
    const uint64_t at     = in.offset();
    const uint64_t length = in.read<uint64_t>(io::hostByteOrder(), "parameters length");
    if (length > in.remaining())
    {
        in.fail("parameters length", at,
                std::to_string(length) + " bytes exceed the file (" + std::to_string(in.remaining()) + " bytes left)");
    }
    std::vector<char> text = in.readArray<char>(length, io::hostByteOrder(), "parameters");
    try
    {
        p = parametersFromText(std::string(text.begin(), text.end()));
    }
    catch (const ParameterError& e)
    {
        in.fail("parameters", at + sizeof(uint64_t), e.what());
    }
}

/// Version 1: the parameters in fixed binary fields, then the force options.
void readParametersV1(io::FileReader& in, CheckpointImage& c)
{
    const io::ByteOrder order = io::hostByteOrder();
    Parameters& p             = c.parameters;
    p.opening_angle           = in.read<double>(order, "opening_angle");
    p.epsilon_squared         = in.read<double>(order, "epsilon_squared");
    p.gravitational_constant  = in.read<double>(order, "gravitational_constant");
    p.n_leaf                  = in.read<int32_t>(order, "n_leaf");
    p.n_group                 = in.read<int32_t>(order, "n_group");
    const uint64_t macAt      = in.offset();
    const int32_t mac         = in.read<int32_t>(order, "mac");
    if (mac != int32_t(Mac::Bonsai) && mac != int32_t(Mac::Octgrav))
    {
        in.fail("mac", macAt, std::to_string(mac) + " is not a MAC");
    }
    p.mac                    = Mac(mac);
    p.use_quadrupole         = in.read<int32_t>(order, "use_quadrupole") != 0;
    p.merge_groups           = in.read<int32_t>(order, "merge_groups") != 0;
    const uint64_t backendAt = in.offset();
    const int32_t backend    = in.read<int32_t>(order, "backend");
    if (backend < int32_t(Backend::Auto) || backend > int32_t(Backend::Gpu))
    {
        in.fail("backend", backendAt, std::to_string(backend) + " is not a backend");
    }
    p.backend      = Backend(backend);
    c.direct       = in.read<int32_t>(order, "direct") != 0;
    c.zeroNetForce = in.read<int32_t>(order, "zero_net_force") != 0;
}

/// The optional comoving field before the checksum.
void readComoving(io::FileReader& in, CheckpointImage& c)
{
    const uint64_t at     = in.offset();
    const uint64_t length = in.read<uint64_t>(io::hostByteOrder(), "comoving length");
    if (length == 0 || length > in.remaining() - std::min<uint64_t>(in.remaining(), sizeof(uint64_t)))
    {
        in.fail("comoving length", at,
                std::to_string(length) + " bytes do not fit before the checksum (" + std::to_string(in.remaining()) +
                    " bytes left)");
    }
    std::vector<char> text = in.readArray<char>(length, io::hostByteOrder(), "comoving");
    c.comoving.assign(text.begin(), text.end());
}

/// Versions 4, 6 and 7's pipeline field (checkpoint.h): version 6 added the lag, version 4's runs had lag 1.
void readPipeline(io::FileReader& in, uint64_t n, bool withLag, CheckpointImage& c)
{
    const io::ByteOrder order = io::hostByteOrder();
    const uint64_t at         = in.offset();
    PipelineFields& f         = c.pipeline;
    f.rebuildEvery            = in.read<int64_t>(order, "rebuild_every");
    f.lastRebuildStep         = in.read<int64_t>(order, "last rebuild step");
    f.freshInteractions       = in.read<int64_t>(order, "fresh interactions");
    f.lastInteractions        = in.read<int64_t>(order, "last interactions");
    f.rebuilds                = in.read<int64_t>(order, "rebuilds");
    f.adoptStep               = in.read<int64_t>(order, "adopt step");
    f.rebuildLag              = withLag ? in.read<int64_t>(order, "rebuild lag") : 1;
    if (f.rebuildEvery < 0 || f.rebuildEvery == 1 || f.adoptStep < -1 || f.lastRebuildStep < 0 || f.rebuildLag < 1 ||
        (f.rebuildEvery >= 2 && f.rebuildLag > f.rebuildEvery))
    {
        in.fail("rebuild_every", at,
                "rebuild_every " + std::to_string(f.rebuildEvery) + ", rebuild lag " + std::to_string(f.rebuildLag) +
                    ", last rebuild " + std::to_string(f.lastRebuildStep) + ", adopt step " +
                    std::to_string(f.adoptStep) + " are not a pipeline's state");
    }
    f.topologyPos = in.readArray<Vec3d>(n, order, "topology positions");
    if (f.adoptStep >= 0) f.inFlightPos = in.readArray<Vec3d>(n, order, "in-flight positions");
}

/// Versions 5 and 7's results field: finite forces, as the run that wrote them checked them.
void readResults(io::FileReader& in, uint64_t n, std::vector<F4>& results)
{
    const uint64_t at = in.offset();
    results           = in.readArray<F4>(n, io::hostByteOrder(), "results");
    for (uint64_t i = 0; i < n; ++i)
    {
        const F4& r = results[i];
        if (!std::isfinite(r.x) || !std::isfinite(r.y) || !std::isfinite(r.z) || !std::isfinite(r.w))
        {
            in.fail("results", at + i * sizeof(F4), "body " + std::to_string(i) + " has a force that is not finite");
        }
    }
}

/// Fails naming `field` unless n values of `bytes` each fit before the checksum: otherwise a block cut short
/// would read the checksum as its last values and be reported as a checksum problem.
void requireBeforeChecksum(io::FileReader& in, uint64_t n, uint64_t bytes, const std::string& field)
{
    const uint64_t room = in.remaining() - std::min<uint64_t>(in.remaining(), sizeof(uint64_t));
    if (n > room / bytes)
    {
        in.fail(field, in.offset(),
                std::to_string(n) + " values of " + std::to_string(bytes) + " bytes do not fit before the checksum (" +
                    std::to_string(room) + " bytes left)");
    }
}

/// Versions 7 and 8's presence flag of an optional block: 0 or 1, anything else is damage the checksum missed.
bool readPresence(io::FileReader& in, const std::string& field)
{
    requireBeforeChecksum(in, 1, 1, field);
    const uint64_t at  = in.offset();
    const uint8_t flag = in.read<uint8_t>(io::hostByteOrder(), field);
    if (flag > 1) in.fail(field, at, std::to_string(int(flag)) + " is not a presence flag (0 or 1)");
    return flag == 1;
}

/// Versions 7 and 8's blocks after the pipeline field (checkpoint.h); state positions belong to a pipeline.
void readVersion7Blocks(io::FileReader& in, uint64_t n, bool pipelined, CheckpointImage& c)
{
    if (readPresence(in, "results flag"))
    {
        requireBeforeChecksum(in, n, sizeof(F4), "results");
        readResults(in, n, c.results);
    }
    const uint64_t flagAt = in.offset();
    if (readPresence(in, "state positions flag"))
    {
        if (!pipelined) in.fail("state positions flag", flagAt, "1 without a pipeline field");
        requireBeforeChecksum(in, n, sizeof(Vec3d), "state positions");
        const uint64_t at   = in.offset();
        c.pipeline.statePos = in.readArray<Vec3d>(n, io::hostByteOrder(), "state positions");
        for (uint64_t i = 0; i < n; ++i)
        {
            const Vec3d& x = c.pipeline.statePos[i];
            if (!std::isfinite(x.x) || !std::isfinite(x.y) || !std::isfinite(x.z))
            {
                in.fail("state positions", at + i * sizeof(Vec3d),
                        "body " + std::to_string(i) + " has a position that is not finite");
            }
        }
    }
}

/// Version 3: one GADGET type (0..5) per body.
void readTypes(io::FileReader& in, uint64_t n, std::vector<uint8_t>& types)
{
    const uint64_t at = in.offset();
    types             = in.readArray<uint8_t>(n, io::hostByteOrder(), "types");
    for (uint64_t i = 0; i < n; ++i)
    {
        if (types[i] >= io::numParticleTypes)
        {
            in.fail("types", at + i,
                    "body " + std::to_string(i) + " has type " + std::to_string(int(types[i])) +
                        ", not a GADGET type 0..5");
        }
    }
}

} // namespace

void writeCheckpoint(const std::string& path, const CheckpointImage& c, CheckpointVersion version)
{
    const ParticleSet& s = c.state;
    const int64_t n      = s.size();
    if (s.vel.size() != size_t(n) || s.mass.size() != size_t(n) || s.id.size() != size_t(n) ||
        (s.type.size() != size_t(n) && !s.type.empty()))
    {
        throw InputError("checkpoint '" + path + "': " + std::to_string(n) + " positions but " +
                         std::to_string(s.vel.size()) + " velocities, " + std::to_string(s.mass.size()) + " masses, " +
                         std::to_string(s.id.size()) + " ids and " + std::to_string(s.type.size()) + " types");
    }
    const Parameters& p     = c.parameters;
    const PipelineFields& f = c.pipeline;
    const bool pipelined    = f.rebuildEvery != 1;
    if (pipelined && (f.topologyPos.size() != size_t(n) || (f.adoptStep >= 0 && f.inFlightPos.size() != size_t(n))))
    {
        throw InputError("checkpoint '" + path + "': the pipeline's positions do not have " + std::to_string(n) +
                         " entries");
    }
    const bool withResults  = !c.results.empty();
    const bool withStatePos = !f.statePos.empty();
    if (withResults && c.results.size() != size_t(n))
    {
        throw InputError("checkpoint '" + path + "': results has " + std::to_string(c.results.size()) +
                         " entries for " + std::to_string(n) + " bodies");
    }
    if (withStatePos && (f.statePos.size() != size_t(n) || !pipelined))
    {
        throw InputError("checkpoint '" + path + "': pipeline.statePos has " + std::to_string(f.statePos.size()) +
                         " entries for " + std::to_string(n) + " bodies" +
                         (pipelined ? "" : ", but the image has no pipeline (rebuildEvery 1)"));
    }
    const bool v8 = version == CheckpointVersion::Current;
    // Before version 8: version 7 only where version 6 cannot hold the image, so that every other image keeps the
    // bytes the builds before it wrote.
    const bool v7 = !v8 && pipelined && (withResults || withStatePos);
    AtomicFile file(path, Existing::KeepAsPrev);
    HashedWriter out(file, v8);
    out.write(v8 ? kMagicV8 : v7 ? kMagicV7 : pipelined ? kMagicV6 : withResults ? kMagicV5 : kMagic, sizeof(kMagic));
    out.put(n);
    out.put(c.step);
    out.put(c.numSteps);
    out.put(c.t0);
    out.put(c.h);
    out.put(c.initialEnergy);
    out.put(int32_t(c.direct));
    out.put(int32_t(c.zeroNetForce));
    const std::string parameters = toText(p);
    out.put(uint64_t(parameters.size()));
    out.write(parameters.data(), parameters.size());
    out.putArray(s.pos);
    out.putArray(s.vel);
    out.putArray(s.mass);
    out.putArray(s.id);
    out.putArray(s.type.empty() ? std::vector<uint8_t>(size_t(n), uint8_t(1)) : s.type); // no types: all halo
    out.put(uint64_t(c.extra.size()));
    out.write(c.extra.data(), c.extra.size());
    if (v8) out.put(uint8_t(pipelined));
    if (pipelined)
    {
        for (int64_t v : {f.rebuildEvery, f.lastRebuildStep, f.freshInteractions, f.lastInteractions, f.rebuilds,
                          f.adoptStep, f.rebuildLag})
            out.put(v);
        out.putArray(f.topologyPos);
        if (f.adoptStep >= 0) out.putArray(f.inFlightPos);
    }
    if (v7 || v8)
    {
        out.put(uint8_t(withResults));
        if (withResults) out.putArray(c.results);
        out.put(uint8_t(withStatePos));
        if (withStatePos) out.putArray(f.statePos);
    }
    else if (withResults)
    {
        out.putArray(c.results);
    }
    if (!c.comoving.empty())
    {
        out.put(uint64_t(c.comoving.size()));
        out.write(c.comoving.data(), c.comoving.size());
    }
    const uint64_t checksum = out.hash();
    file.write(&checksum, sizeof(checksum));
    file.commit();
}

namespace {

/// Which layout a checkpoint's magic names.
struct Layout
{
    bool v1, v2, v4, v5, v6, v7, v8;
};

/// The layout the file's magic names; FormatError when it names none.
Layout readMagic(io::FileReader& in, char (&magic)[sizeof(kMagic)])
{
    if (in.size() < sizeof(kMagic) + sizeof(uint64_t))
    {
        in.fail("magic", 0, "the file has " + std::to_string(in.size()) + " bytes: not an octwalk checkpoint");
    }
    in.read(magic, sizeof(magic), "magic");
    const auto is = [&magic](const char(&m)[sizeof(kMagic)]) { return std::memcmp(magic, m, sizeof(kMagic)) == 0; };
    const Layout l{is(kMagicV1), is(kMagicV2), is(kMagicV4), is(kMagicV5), is(kMagicV6), is(kMagicV7), is(kMagicV8)};
    if (!l.v1 && !l.v2 && !l.v4 && !l.v5 && !l.v6 && !l.v7 && !l.v8 && !is(kMagic))
    {
        in.fail("magic", 0, "not an octwalk checkpoint");
    }
    return l;
}

/// Everything between the magic and the checksum, in order; leaves the reader at the checksum.
void readContents(io::FileReader& in, const Layout& l, CheckpointImage& c)
{
    const io::ByteOrder order = io::hostByteOrder();
    const int64_t n           = in.read<int64_t>(order, "N");
    if (n < 0 || uint64_t(n) > in.size() / kBytesPerBody)
    {
        in.fail("N", sizeof(kMagic),
                std::to_string(n) + " bodies do not match the file size " + std::to_string(in.size()));
    }
    c.step          = in.read<int64_t>(order, "step");
    c.numSteps      = in.read<int64_t>(order, "numSteps");
    c.t0            = in.read<double>(order, "t0");
    c.h             = in.read<double>(order, "h");
    c.initialEnergy = in.read<double>(order, "E0");
    if (l.v1)
    {
        readParametersV1(in, c);
    }
    else
    {
        c.direct       = in.read<int32_t>(order, "direct") != 0;
        c.zeroNetForce = in.read<int32_t>(order, "zero_net_force") != 0;
        readParameters(in, c.parameters);
    }
    c.state.pos  = in.readArray<Vec3d>(uint64_t(n), order, "positions");
    c.state.vel  = in.readArray<Vec3d>(uint64_t(n), order, "velocities");
    c.state.mass = in.readArray<double>(uint64_t(n), order, "masses");
    c.state.id   = in.readArray<uint64_t>(uint64_t(n), order, "ids");
    if (l.v1 || l.v2)
    {
        c.state.type.assign(size_t(n), uint8_t(1));
    }
    else
    {
        readTypes(in, uint64_t(n), c.state.type);
    }
    const uint64_t settingsAt = in.offset();
    const uint64_t settings   = in.read<uint64_t>(order, "settings length");
    if (settings > in.remaining() - std::min<uint64_t>(in.remaining(), sizeof(uint64_t)))
    {
        in.fail("settings length", settingsAt,
                std::to_string(settings) + " bytes run into the checksum (" + std::to_string(in.remaining()) +
                    " bytes left)");
    }
    std::vector<char> text = in.readArray<char>(settings, order, "settings");
    c.extra.assign(text.begin(), text.end());
    const bool pipelined = l.v4 || l.v6 || l.v7 || (l.v8 && readPresence(in, "pipeline flag"));
    if (pipelined) readPipeline(in, uint64_t(n), !l.v4, c);
    if (l.v7 || l.v8) readVersion7Blocks(in, uint64_t(n), pipelined, c);
    if (l.v5) readResults(in, uint64_t(n), c.results);
    if (!l.v1 && in.remaining() > sizeof(uint64_t)) readComoving(in, c);
    if (in.remaining() != sizeof(uint64_t))
    {
        in.fail("checksum", in.offset(),
                std::to_string(in.remaining() - sizeof(uint64_t)) + " unexpected bytes before the checksum");
    }
}

} // namespace

CheckpointImage readCheckpoint(const std::string& path)
{
    io::FileReader in(path, "checkpoint");
    char magic[sizeof(kMagic)];
    const Layout layout    = readMagic(in, magic);
    const uint64_t payload = in.size() - sizeof(uint64_t);
    const auto damaged     = [&in, payload]() {
        in.fail("checksum", payload, "does not match the contents (damaged or truncated file)");
    };

    // The checksum is taken in the same pass as the contents (one read of the file). A file whose contents do
    // not parse (any error) is checked again from the start, so that a damaged file is reported as such rather
    // than by the first odd field its damage made.
    RunningHash hash(layout.v8);
    hash.add(magic, sizeof(magic));
    in.watch([&hash](const unsigned char* data, uint64_t n) { hash.add(data, size_t(n)); });
    CheckpointImage c;
    try
    {
        readContents(in, layout, c);
    }
    catch (...)
    {
        if (!checksumHolds(in, layout.v8)) damaged();
        throw;
    }
    in.watch(nullptr);
    if (in.read<uint64_t>(io::hostByteOrder(), "checksum") != hash.value()) damaged();
    if (c.step < 0 || c.step > c.numSteps || !(c.h > 0))
    {
        in.fail("step", sizeof(kMagic) + 8,
                "step " + std::to_string(c.step) + " of " + std::to_string(c.numSteps) +
                    " with h = " + std::to_string(c.h) + " is inconsistent");
    }
    return c;
}

} // namespace octwalk
