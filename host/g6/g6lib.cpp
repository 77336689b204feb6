// libg6: the GRAPE-6 C and Fortran interface on the CPU backend (host/cpu/g6_cpu.h) or the device
// backend (device/g6_gpu.h). This layer checks every argument, chooses the backend, keeps the
// per-cluster state and turns exceptions into return codes with one line on stderr.
#include "host/g6/g6lib.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/hermite.h"
#include "device/g6_gpu.h"
#include "host/cpu/g6_cpu.h"

namespace octwalk {
namespace {

constexpr int kMaxClusters      = 16;
constexpr int kDefaultNpipes    = 1024;
constexpr int kMaxNpipes        = 16384;
constexpr long kDefaultJMemMax  = 1L << 24;
constexpr int kInitialJCapacity = 1 << 14;

/// The state of one cluster id between g6_open and g6_close.
struct Cluster
{
    std::unique_ptr<G6Cpu> cpu;
    std::unique_ptr<G6Gpu> gpu;
    int capacity  = 0; ///< addresses reserved in the backend
    int jCount    = 0; ///< highest address set + 1
    int jMax      = 0; ///< OCTWALK_G6_JMEM_MAX
    bool pending  = false;
    int pendingNi = 0, pendingNj = 0;
    std::string pendingError; ///< g6calc_firsthalf's failure, reported by lasthalf
    int lastNi          = -1; ///< i-particles of the last completed calculation
    bool haveNeighbours = false;
    std::vector<int64_t> nbOffset;
    std::vector<int32_t> nbList;
};

Cluster& clusterSlot(int id)
{
    static Cluster clusters[kMaxClusters];
    return clusters[id];
}

bool isOpen(int id) { return id >= 0 && id < kMaxClusters && (clusterSlot(id).cpu || clusterSlot(id).gpu); }

void report(const char* function, const std::string& message)
{
    std::fprintf(stderr, "libg6: %s: %s\n", function, message.c_str());
}

/// The cluster of an open id; throws InputError naming the id otherwise.
Cluster& openCluster(int id)
{
    if (id < 0 || id >= kMaxClusters)
        throw InputError("cluster id " + std::to_string(id) + " out of range 0.." + std::to_string(kMaxClusters - 1));
    if (!isOpen(id)) throw InputError("cluster id " + std::to_string(id) + " is not open (call g6_open first)");
    return clusterSlot(id);
}

std::string envString(const char* name, const char* fallback)
{
    const char* value = std::getenv(name);
    return value && *value ? std::string(value) : std::string(fallback);
}

/// An integer environment variable in [lo, hi]; throws ParameterError naming it otherwise.
long envInteger(const char* name, long fallback, long lo, long hi)
{
    const char* value = std::getenv(name);
    if (!value || !*value) return fallback;
    char* end = nullptr;
    errno     = 0;
    long v    = std::strtol(value, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi)
        throw ParameterError(std::string(name) + " = '" + value + "': expected an integer in " + std::to_string(lo) +
                             ".." + std::to_string(hi));
    return v;
}

void requireFinite(double value, const char* what, int particle)
{
    if (std::isfinite(value)) return;
    std::string where = particle >= 0 ? " of particle " + std::to_string(particle) : std::string();
    throw InputError(std::string(what) + where + " is not finite (" + std::to_string(value) + ")");
}

void requireFinite3(const double v[3], const char* what, int particle)
{
    for (int k = 0; k < 3; ++k) requireFinite(v[k], what, particle);
}

/// Runs body; an exception becomes a message on stderr and -1.
template<class Body>
int guarded(const char* function, Body body)
{
    try
    {
        return body();
    }
    catch (const std::exception& e)
    {
        report(function, e.what());
        return -1;
    }
    catch (...)
    {
        report(function, "unknown error");
        return -1;
    }
}

/// A double in messages: six significant digits (std::to_string prints 1e80 with 81 digits).
std::string number(double v)
{
    char text[32];
    std::snprintf(text, sizeof(text), "%.6g", v);
    return text;
}

bool finite3(const double v[3]) { return std::isfinite(v[0]) && std::isfinite(v[1]) && std::isfinite(v[2]); }

/// InputError for the first i-particle whose acc, jerk or pot is not finite: finite input can still
/// overflow double (a j-particle within about 1e-100 of it with eps2 = 0, coordinates or velocities
/// beyond about 1e150, a mass near 1e308 close by, a prediction over a huge interval).
void checkOutputsFinite(int ni, const int* index, const G6Outputs& out)
{
    for (int i = 0; i < ni; ++i)
    {
        const char* what = !finite3(out.acc[i])         ? "acc"
                           : !finite3(out.jerk[i])      ? "jerk"
                           : !std::isfinite(out.pot[i]) ? "pot"
                                                        : nullptr;
        if (what == nullptr) continue;
        const double* v   = what[0] == 'a' ? out.acc[i] : what[0] == 'j' ? out.jerk[i] : &out.pot[i];
        std::string value = number(v[0]);
        if (what[0] != 'p') value += ", " + number(v[1]) + ", " + number(v[2]);
        const std::string who = index ? "i-particle " + std::to_string(index[i]) + " (pipe " + std::to_string(i) + ")"
                                      : "the i-particle of pipe " + std::to_string(i);
        throw InputError(std::string(what) + " of " + who + " is not finite (" + value +
                         ") from finite input: it overflows double (a j-particle within about 1e-100 of it with "
                         "eps2 = 0, or positions, velocities or masses whose products overflow)");
    }
}

/// Host bytes of one j-particle address: its Taylor data and its predicted position and velocity (the
/// device backend keeps a copy of about as much on the device).
constexpr double kBytesPerJParticle = sizeof(G6JParticle) + 6 * sizeof(double);
/// Growth of j-memory by one call beyond which the library says what it takes before taking it.
constexpr double kGrowthNoticeBytes = 1 << 30;

std::string megabytes(double bytes) { return std::to_string(long(std::ceil(bytes / (1 << 20)))) + " MB"; }

/// Makes room for `address` (of particle `index`): j-memory covers every address below the highest one set,
/// so one high address takes memory for all of them. A growth of more than kGrowthNoticeBytes is announced
/// on stderr first; memory that cannot be had is a BackendError naming the address and the size.
void reserveJ(Cluster& c, int address, int index)
{
    if (address < c.capacity) return;
    long grown         = std::max<long>(long(address) + 1, 2L * c.capacity);
    int count          = int(std::min<long>(grown, c.jMax));
    const double bytes = double(count) * kBytesPerJParticle;
    const std::string what =
        "address " + std::to_string(address) + " of particle " + std::to_string(index) + " grows j-memory from " +
        std::to_string(c.capacity) + " to " + std::to_string(count) + " addresses, about " + megabytes(bytes) +
        (c.gpu ? " of host and as much of device" : " of") +
        " memory (every address below the highest one set is held; OCTWALK_G6_JMEM_MAX = " + std::to_string(c.jMax) +
        " bounds it)";
    if (double(count - c.capacity) * kBytesPerJParticle > kGrowthNoticeBytes) report("g6_set_j_particle", what);
    try
    {
        if (c.gpu) c.gpu->reserve(count);
        else c.cpu->reserve(count);
    }
    catch (const std::bad_alloc&)
    {
        throw BackendError(what + ": out of memory");
    }
    catch (const BackendError& e)
    {
        throw BackendError(what + ": " + e.what());
    }
    c.capacity = count;
}

void checkBlock(const Cluster& c, int nj, int ni, const int* index, const double (*xi)[3], const double (*vi)[3],
                double eps2, const double* h2)
{
    if (ni < 0 || ni > g6_npipes())
        throw InputError("ni = " + std::to_string(ni) + " outside 0..g6_npipes() = " + std::to_string(g6_npipes()));
    if (nj < 0 || nj > c.jCount)
    {
        const std::string set = c.jCount == 0
                                    ? "no j-particle is set"
                                    : "j-particles are set at addresses 0.." + std::to_string(c.jCount - 1) + " only";
        throw InputError("nj = " + std::to_string(nj) + " but " + set);
    }
    requireFinite(eps2, "eps2", -1);
    if (eps2 < 0) throw InputError("eps2 = " + std::to_string(eps2) + " is negative");
    if (ni > 0 && (!index || !xi || !vi || !h2)) throw InputError("null index, xi, vi or h2 array");
    for (int i = 0; i < ni; ++i)
    {
        requireFinite3(xi[i], "xi", index[i]);
        requireFinite3(vi[i], "vi", index[i]);
        requireFinite(h2[i], "h2", index[i]);
    }
}

void startBlock(Cluster& c, int nj, int ni, const int* index, const double (*xi)[3], const double (*vi)[3], double eps2,
                const double* h2)
{
    checkBlock(c, nj, ni, index, xi, vi, eps2, h2);
    G6IBlock block;
    block.nj         = nj;
    block.ni         = ni;
    block.index      = index;
    block.x          = xi;
    block.v          = vi;
    block.h2         = h2;
    block.eps2       = eps2;
    c.haveNeighbours = false;
    c.lastNi         = -1;
    if (c.gpu) c.gpu->startForces(block);
    else c.cpu->startForces(block);
    c.pending   = true;
    c.pendingNi = ni;
    c.pendingNj = nj;
}

int lastHalf(const char* function, int id, int nj, int ni, int index[], double xi[][3], double vi[][3], double eps2,
             double h2[], double acc[][3], double jerk[][3], double pot[], int nnbindex[])
{
    return guarded(function, [&] {
        Cluster& c = openCluster(id);
        if (!c.pendingError.empty())
        {
            std::string error = c.pendingError;
            c.pendingError.clear();
            throw InputError("g6calc_firsthalf failed: " + error);
        }
        if (!c.pending) startBlock(c, nj, ni, index, xi, vi, eps2, h2);
        if (ni != c.pendingNi || nj != c.pendingNj)
        {
            c.pending = false;
            throw InputError("ni = " + std::to_string(ni) + ", nj = " + std::to_string(nj) +
                             " differ from g6calc_firsthalf's ni = " + std::to_string(c.pendingNi) +
                             ", nj = " + std::to_string(c.pendingNj));
        }
        if (ni > 0 && (!acc || !jerk || !pot)) throw InputError("null acc, jerk or pot array");
        G6Outputs out{acc, jerk, pot, nnbindex};
        c.pending = false;
        if (c.gpu) c.gpu->finishForces(out);
        else c.cpu->finishForces(out);
        checkOutputsFinite(ni, index, out);
        c.lastNi = ni;
        return 0;
    });
}

int openNewCluster(int id)
{
    if (id < 0 || id >= kMaxClusters)
        throw InputError("cluster id " + std::to_string(id) + " out of range 0.." + std::to_string(kMaxClusters - 1));
    if (isOpen(id)) throw InputError("cluster id " + std::to_string(id) + " is already open");
    std::string backend   = envString("OCTWALK_G6_BACKEND", "auto");
    std::string precision = envString("OCTWALK_G6_PRECISION", "ds");
    if (backend != "auto" && backend != "gpu" && backend != "cpu")
        throw ParameterError("OCTWALK_G6_BACKEND = '" + backend + "': expected auto, gpu or cpu");
    if (precision != "ds" && precision != "double")
        throw ParameterError("OCTWALK_G6_PRECISION = '" + precision + "': expected ds or double");
    Cluster fresh;
    fresh.jMax  = int(envInteger("OCTWALK_G6_JMEM_MAX", kDefaultJMemMax, 1, 1L << 30));
    bool useGpu = backend == "gpu" || (backend == "auto" && g6GpuAvailable());
    if (backend == "gpu" && !g6GpuAvailable())
        throw BackendError("OCTWALK_G6_BACKEND = gpu, but no CUDA device is available");
    if (backend == "auto" && !useGpu) std::fprintf(stderr, "libg6: no CUDA device, using the CPU backend (double)\n");
    if (useGpu)
        fresh.gpu = std::make_unique<G6Gpu>(precision == "double" ? G6Precision::Double : G6Precision::DoubleSingle);
    else fresh.cpu = std::make_unique<G6Cpu>();
    Cluster& c = clusterSlot(id);
    c          = std::move(fresh);
    reserveJ(c, std::min(kInitialJCapacity, c.jMax) - 1, -1);
    return 0;
}

} // namespace
} // namespace octwalk

using namespace octwalk;

extern "C" {

int g6_open(int id)
{
    return guarded("g6_open", [&] { return openNewCluster(id); });
}

int g6_close(int id)
{
    return guarded("g6_close", [&] {
        octwalk::openCluster(id); // throws when not open
        clusterSlot(id) = Cluster{};
        return 0;
    });
}

int g6_npipes(void)
{
    static const int npipes = [] {
        try
        {
            return int(envInteger("OCTWALK_G6_NPIPES", kDefaultNpipes, 1, kMaxNpipes));
        }
        catch (const std::exception& e)
        {
            report("g6_npipes", std::string(e.what()) + "; using " + std::to_string(kDefaultNpipes));
            return kDefaultNpipes;
        }
    }();
    return npipes;
}

int g6_set_tunit(double) { return 0; }

int g6_set_xunit(double) { return 0; }

int g6_set_ti(int id, double ti)
{
    return guarded("g6_set_ti", [&] {
        Cluster& c = octwalk::openCluster(id);
        requireFinite(ti, "ti", -1);
        if (c.gpu) c.gpu->setTime(ti);
        else c.cpu->setTime(ti);
        return 0;
    });
}

int g6_set_j_particle(int id, int address, int index, double tj, double dtj, double mass, double k18[3], double j6[3],
                      double a2[3], double v[3], double x[3])
{
    (void)dtj;
    return guarded("g6_set_j_particle", [&] {
        Cluster& c = octwalk::openCluster(id);
        if (address < 0 || address >= c.jMax)
            throw InputError("address " + std::to_string(address) + " of particle " + std::to_string(index) +
                             " outside the j-memory 0.." + std::to_string(c.jMax - 1) + " (OCTWALK_G6_JMEM_MAX)");
        if (!k18 || !j6 || !a2 || !v || !x) throw InputError("null array for particle " + std::to_string(index));
        requireFinite(tj, "tj", index);
        requireFinite(mass, "mass", index);
        requireFinite3(x, "x", index);
        requireFinite3(v, "v", index);
        requireFinite3(a2, "a2", index);
        requireFinite3(j6, "j6", index);
        requireFinite3(k18, "k18", index);
        G6JParticle p{};
        for (int k = 0; k < 3; ++k)
        {
            p.x[k]   = x[k];
            p.v[k]   = v[k];
            p.a2[k]  = a2[k];
            p.j6[k]  = j6[k];
            p.k18[k] = k18[k];
        }
        p.t     = tj;
        p.mass  = mass;
        p.index = index;
        reserveJ(c, address, index);
        if (c.gpu) c.gpu->setJParticle(address, p);
        else c.cpu->setJParticle(address, p);
        c.jCount = std::max(c.jCount, address + 1);
        return 0;
    });
}

void g6calc_firsthalf(int id, int nj, int ni, int index[], double xi[][3], double vi[][3], double aold[][3],
                      double j6old[][3], double phiold[], double eps2, double h2[])
{
    (void)aold;
    (void)j6old;
    (void)phiold;
    guarded("g6calc_firsthalf", [&] {
        Cluster& c = octwalk::openCluster(id);
        c.pendingError.clear();
        c.pending = false;
        // Reported once, by g6calc_lasthalf, which the client checks.
        try
        {
            startBlock(c, nj, ni, index, xi, vi, eps2, h2);
        }
        catch (const std::exception& e)
        {
            c.pendingError = e.what();
        }
        return 0;
    });
}

int g6calc_lasthalf(int id, int nj, int ni, int index[], double xi[][3], double vi[][3], double eps2, double h2[],
                    double acc[][3], double jerk[][3], double pot[])
{
    return lastHalf("g6calc_lasthalf", id, nj, ni, index, xi, vi, eps2, h2, acc, jerk, pot, nullptr);
}

int g6calc_lasthalf2(int id, int nj, int ni, int index[], double xi[][3], double vi[][3], double eps2, double h2[],
                     double acc[][3], double jerk[][3], double pot[], int nnbindex[])
{
    return guarded("g6calc_lasthalf2", [&] {
        if (ni > 0 && !nnbindex) throw InputError("null nnbindex array");
        return lastHalf("g6calc_lasthalf2", id, nj, ni, index, xi, vi, eps2, h2, acc, jerk, pot, nnbindex);
    });
}

int g6_initialize_jp_buffer(int id, int size)
{
    (void)size;
    return guarded("g6_initialize_jp_buffer", [&] {
        octwalk::openCluster(id);
        return 0;
    });
}

int g6_flush_jp_buffer(int id)
{
    return guarded("g6_flush_jp_buffer", [&] {
        Cluster& c = octwalk::openCluster(id);
        if (c.gpu) c.gpu->flush();
        return 0;
    });
}

int g6_reset(int id)
{
    return guarded("g6_reset", [&] {
        Cluster& c = octwalk::openCluster(id);
        c.jCount   = 0;
        c.pending  = false;
        c.pendingError.clear();
        c.lastNi         = -1;
        c.haveNeighbours = false;
        return 0;
    });
}

int g6_reset_fofpga(int id)
{
    return guarded("g6_reset_fofpga", [&] {
        octwalk::openCluster(id);
        return 0;
    });
}

int g6_read_neighbour_list(int id)
{
    return guarded("g6_read_neighbour_list", [&] {
        Cluster& c = octwalk::openCluster(id);
        if (c.lastNi < 0) throw InputError("no completed calculation (call g6calc_lasthalf first)");
        if (c.gpu) c.gpu->neighbourLists(c.nbOffset, c.nbList);
        else c.cpu->neighbourLists(c.nbOffset, c.nbList);
        c.haveNeighbours = true;
        return 0;
    });
}

int g6_get_neighbour_list(int id, int ipipe, int maxlength, int* nblen, int list[])
{
    return guarded("g6_get_neighbour_list", [&] {
        Cluster& c = octwalk::openCluster(id);
        if (!c.haveNeighbours) throw InputError("no neighbour lists (call g6_read_neighbour_list first)");
        if (ipipe < 0 || ipipe >= c.lastNi)
            throw InputError("ipipe = " + std::to_string(ipipe) + " outside 0.." + std::to_string(c.lastNi - 1));
        if (!nblen || (maxlength > 0 && !list)) throw InputError("null nblen or list");
        int64_t begin  = c.nbOffset[size_t(ipipe)];
        int64_t length = c.nbOffset[size_t(ipipe) + 1] - begin;
        int64_t copied = std::min<int64_t>(length, std::max(maxlength, 0));
        for (int64_t k = 0; k < copied; ++k) list[k] = c.nbList[size_t(begin + k)];
        *nblen = int(length);
        return length > copied ? 1 : 0;
    });
}

void g6_set_neighbour_list_sort_mode(int mode) { (void)mode; }

int g6_set_overflow_flag_test_mode(int aflag, int jflag, int vflag)
{
    (void)aflag;
    (void)jflag;
    (void)vflag;
    return 0;
}

int g6_open_(int* id) { return g6_open(*id); }
int g6_close_(int* id) { return g6_close(*id); }
int g6_npipes_(void) { return g6_npipes(); }
int g6_set_tunit_(int* t) { return g6_set_tunit(t ? double(*t) : 0.0); }
int g6_set_xunit_(int* x) { return g6_set_xunit(x ? double(*x) : 0.0); }
int g6_set_ti_(int* id, double* ti) { return g6_set_ti(*id, *ti); }

int g6_set_j_particle_(int* id, int* address, int* index, double* tj, double* dtj, double* mass, double k18[3],
                       double j6[3], double a2[3], double v[3], double x[3])
{
    return g6_set_j_particle(*id, *address, *index, *tj, *dtj, *mass, k18, j6, a2, v, x);
}

void g6calc_firsthalf_(int* id, int* nj, int* ni, int index[], double xi[][3], double vi[][3], double aold[][3],
                       double j6old[][3], double phiold[], double* eps2, double h2[])
{
    g6calc_firsthalf(*id, *nj, *ni, index, xi, vi, aold, j6old, phiold, *eps2, h2);
}

int g6calc_lasthalf_(int* id, int* nj, int* ni, int index[], double xi[][3], double vi[][3], double* eps2, double h2[],
                     double acc[][3], double jerk[][3], double pot[])
{
    return g6calc_lasthalf(*id, *nj, *ni, index, xi, vi, *eps2, h2, acc, jerk, pot);
}

int g6calc_lasthalf2_(int* id, int* nj, int* ni, int index[], double xi[][3], double vi[][3], double* eps2, double h2[],
                      double acc[][3], double jerk[][3], double pot[], int nnbindex[])
{
    return g6calc_lasthalf2(*id, *nj, *ni, index, xi, vi, *eps2, h2, acc, jerk, pot, nnbindex);
}

int g6_initialize_jp_buffer_(int* id, int* size) { return g6_initialize_jp_buffer(*id, *size); }
int g6_flush_jp_buffer_(int* id) { return g6_flush_jp_buffer(*id); }
int g6_reset_(int* id) { return g6_reset(*id); }
int g6_reset_fofpga_(int* id) { return g6_reset_fofpga(*id); }
int g6_read_neighbour_list_(int* id) { return g6_read_neighbour_list(*id); }

int g6_get_neighbour_list_(int* id, int* ipipe, int* maxlength, int* nblen, int list[])
{
    return g6_get_neighbour_list(*id, *ipipe, *maxlength, nblen, list);
}

void g6_set_neighbour_list_sort_mode_(int* mode) { g6_set_neighbour_list_sort_mode(*mode); }

int g6_set_overflow_flag_test_mode_(int* aflag, int* jflag, int* vflag)
{
    return g6_set_overflow_flag_test_mode(*aflag, *jflag, *vflag);
}

} // extern "C"
