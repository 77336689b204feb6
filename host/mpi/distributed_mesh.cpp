#include "host/mpi/distributed_mesh.h"

#include <fftw3.h>

#include <algorithm>
#include <complex>
#include <string>

#include "common/errors.h"
#include "common/pm.h"
#include "host/core/parallel.h"
#include "host/core/timer.h"
#include "host/pm/aligned_plans.h"
#include "host/pm/pm_mesh.h"

namespace octwalk::mpi {

namespace {

/// A body on its way to the slab that holds its cloud's first plane.
struct MeshBody
{
    Vec3d pos;
    double mass;
};

/// The potential and the three accelerations of a body, on their way back to its rank.
struct MeshValues
{
    double value[4];
};

/// An array from fftw_malloc (FFTW's alignment), at least one element so that an empty slab has an address.
template<class T>
class FftwArray
{
public:
    FftwArray(int64_t count, const std::string& what) : count_(count)
    {
        data_ = static_cast<T*>(fftw_malloc(sizeof(T) * size_t(std::max<int64_t>(count, 1))));
        if (!data_)
        {
            throw BackendError("out of host memory for " + what + " (" +
                               std::to_string((int64_t(sizeof(T)) * count) >> 20) + " MiB)");
        }
    }
    ~FftwArray() { fftw_free(data_); }
    FftwArray(const FftwArray&)            = delete;
    FftwArray& operator=(const FftwArray&) = delete;
    T* get() const { return data_; }
    int64_t size() const { return count_; }

private:
    T* data_ = nullptr;
    int64_t count_;
};

using Complex = std::complex<double>;

fftw_complex* asFftw(Complex* c) { return reinterpret_cast<fftw_complex*>(c); }

} // namespace

/// The bodies' and their values' buffers of the exchanges, kept from step to step: at 2^23 bodies a rank each holds
/// 256 MB, which a step would otherwise allocate and fault in again; and the ghost planes of one field, fetched
/// eight times a step (four fields, twice interlaced).
struct DistributedMesh::Buffers
{
    std::vector<MeshBody> bodiesOut, bodiesIn;
    std::vector<MeshValues> valuesOut, valuesIn;
    std::vector<double> ghostsOut, ghostsIn;
};

/// The slab's arrays: its planes (own and ghost) in real space, the masses and then each field in turn, the
/// spectrum of its planes, the spectrum of its rows after the transpose and the potential's spectrum kept there.
struct DistributedMesh::Arrays
{
    FftwArray<double> real;
    FftwArray<Complex> planes, rows, potential;
    /// One plane's spectrum per thread: each field of a plane is transformed back from its own copy.
    std::vector<std::unique_ptr<FftwArray<Complex>>> scratch;

    Arrays(int64_t n, int64_t held, int64_t own)
        : real(held * n * n, "the planes of a mesh slab"), planes(own * n * (n / 2 + 1), "a mesh slab's spectrum"),
          rows(own * n * (n / 2 + 1), "a mesh slab's transposed spectrum"),
          potential(own * n * (n / 2 + 1), "a mesh slab's potential spectrum")
    {}
};

/// The serial plans: transforms of one plane (y, z) and of one row (along x, for every z wavenumber).
struct DistributedMesh::Plans
{
    AlignedPlans planeForward, planeBackward, rowForward, rowBackward;

    explicit Plans(int n)
        : planeForward(planeForwardPlan(n), "the " + std::to_string(n) + "^2 planes of a mesh slab"),
          planeBackward(planeBackwardPlan(n), "the " + std::to_string(n) + "^2 planes of a mesh slab"),
          rowForward([n](void* in, void* out) { return rowPlan(n, in, out, FFTW_FORWARD); },
                     "the x rows of a mesh slab of " + std::to_string(n) + "^3"),
          rowBackward([n](void* in, void* out) { return rowPlan(n, in, out, FFTW_BACKWARD); },
                      "the x rows of a mesh slab of " + std::to_string(n) + "^3")
    {}

    /// A row after the transpose is x major, n x (n/2 + 1): column l is the transform over x, stride n/2 + 1.
    static void* rowPlan(int n, void* in, void* out, int sign)
    {
        const int half = n / 2 + 1;
        int length[1]  = {n};
        return fftw_plan_many_dft(1, length, half, static_cast<fftw_complex*>(in), nullptr, half, 1,
                                  static_cast<fftw_complex*>(out), nullptr, half, 1, sign, FFTW_ESTIMATE);
    }
};

// In rank order and in order of distance past the slab: the same list on every rank.
std::vector<DistributedMesh::GhostPlane> DistributedMesh::ghostPlanes(int64_t n, int width,
                                                                      const std::vector<int64_t>& first)
{
    std::vector<GhostPlane> out;
    const int ranks = int(first.size()) - 1;
    for (int r = 0; r < ranks; ++r)
    {
        const int64_t own = first[size_t(r) + 1] - first[size_t(r)];
        if (own == 0) continue;
        for (int g = 0; g < width - 1; ++g)
        {
            const int64_t plane = (first[size_t(r)] + own + g) % n;
            int owner           = 0;
            while (first[size_t(owner) + 1] <= plane) ++owner;
            out.push_back({r, own + g, owner, plane - first[size_t(owner)]});
        }
    }
    return out;
}

/// The spectrum's transpose between slabs of x planes (x, y, z: this rank's x, all y) and slabs of y rows (y, x, z:
/// this rank's y, all x), both cut in the same blocks. What travels between two ranks is the block of the sender's
/// planes and the receiver's rows (or the reverse), x major then y, described by MPI datatypes on both sides
/// (MPI_Alltoallw), so that MPI reads and writes it in place; this rank's own block is copied on the OpenMP
/// threads. A transpose moves values only: the same bits for any thread count.
class DistributedMesh::Transpose
{
public:
    Transpose(const Communicator& comm, int64_t n, const std::vector<int64_t>& first)
        : comm_(comm), n_(n), first_(first)
    {
        const int P = comm.size(), me = comm.rank();
        const int64_t half = n / 2 + 1, own = count(me);
        for (int q = 0; q < P; ++q)
        {
            const bool travels = q != me && own > 0 && count(q) > 0;
            counts_.push_back(travels ? 1 : 0);
            displ_.push_back(0);
            const MPI_Aint at = MPI_Aint(first[size_t(q)] * half * int64_t(sizeof(Complex)));
            planeSide_.push_back(travels ? placed(planeSide(count(q), own), at) : MPI_DOUBLE);
            rowSide_.push_back(travels ? placed(rowSide(count(q), own), at) : MPI_DOUBLE);
        }
    }
    ~Transpose()
    {
        for (size_t q = 0; q < counts_.size(); ++q)
        {
            if (!counts_[q]) continue;
            MPI_Type_free(&planeSide_[q]);
            MPI_Type_free(&rowSide_[q]);
        }
    }
    Transpose(const Transpose&)            = delete;
    Transpose& operator=(const Transpose&) = delete;

    void toRows(const Complex* planes, Complex* rows) const
    {
        comm_.check(MPI_Alltoallw(planes, counts_.data(), displ_.data(), planeSide_.data(), rows, counts_.data(),
                                  displ_.data(), rowSide_.data(), comm_.comm()),
                    "MPI_Alltoallw");
        copyOwnBlock(planes, rows);
    }
    void toPlanes(const Complex* rows, Complex* planes) const
    {
        comm_.check(MPI_Alltoallw(rows, counts_.data(), displ_.data(), rowSide_.data(), planes, counts_.data(),
                                  displ_.data(), planeSide_.data(), comm_.comm()),
                    "MPI_Alltoallw");
        copyOwnBlock(rows, planes);
    }

private:
    int64_t count(int q) const { return first_[size_t(q) + 1] - first_[size_t(q)]; }

    /// On the planes' side: this rank's `planes` planes, and in each the `rows` rows of the partner's block
    /// (contiguous; placed at the partner's first row).
    MPI_Datatype planeSide(int64_t rows, int64_t planes) const
    {
        const int64_t half = n_ / 2 + 1;
        MPI_Datatype type  = MPI_DATATYPE_NULL;
        comm_.check(MPI_Type_vector(int(planes), int(2 * half * rows), int(2 * n_ * half), MPI_DOUBLE, &type),
                    "MPI_Type_vector");
        return type;
    }
    /// On the rows' side: for each of the partner's `planes` planes (x, placed at its first), this rank's `rows`
    /// rows, each a run of n/2 + 1 values n (n/2 + 1) apart.
    MPI_Datatype rowSide(int64_t planes, int64_t rows) const
    {
        const int64_t half = n_ / 2 + 1;
        MPI_Datatype row = MPI_DATATYPE_NULL, type = MPI_DATATYPE_NULL;
        comm_.check(MPI_Type_vector(int(rows), int(2 * half), int(2 * n_ * half), MPI_DOUBLE, &row), "MPI_Type_vector");
        comm_.check(MPI_Type_create_hvector(int(planes), 1, MPI_Aint(half * int64_t(sizeof(Complex))), row, &type),
                    "MPI_Type_create_hvector");
        MPI_Type_free(&row);
        return type;
    }
    /// type starting `bytes` into the buffer, committed: the displacement travels in the type as an MPI_Aint, where
    /// MPI_Alltoallw's int displacements would overflow beyond meshes of about 2900 cells a side.
    MPI_Datatype placed(MPI_Datatype type, MPI_Aint bytes) const
    {
        MPI_Datatype out = MPI_DATATYPE_NULL;
        const int one    = 1;
        comm_.check(MPI_Type_create_hindexed(1, &one, &bytes, type, &out), "MPI_Type_create_hindexed");
        comm_.check(MPI_Type_commit(&out), "MPI_Type_commit");
        MPI_Type_free(&type);
        return out;
    }
    /// This rank's planes of its own rows, between the two layouts (the copy is its own inverse's mirror).
    void copyOwnBlock(const Complex* from, Complex* to) const
    {
        const int me       = comm_.rank();
        const int64_t half = n_ / 2 + 1, own = count(me), first = first_[size_t(me)];
#pragma omp parallel for schedule(static)
        for (int64_t a = 0; a < own; ++a)
        {
            for (int64_t b = 0; b < own; ++b)
                std::copy(from + (a * n_ + first + b) * half, from + (a * n_ + first + b + 1) * half,
                          to + (b * n_ + first + a) * half);
        }
    }

    const Communicator& comm_;
    int64_t n_;
    std::vector<int64_t> first_;
    std::vector<int> counts_, displ_;
    std::vector<MPI_Datatype> planeSide_, rowSide_;
};

DistributedMesh::DistributedMesh(const Communicator& comm, const Parameters& p)
    : comm_(comm.comm()), n_(pmCheckedMeshSize(p.box_size, p.pm_grid, p.asmth, 1.0)),
      block_((n_ + comm_.size() - 1) / comm_.size()), first_(firstPlane(comm_.rank())),
      own_(firstPlane(comm_.rank() + 1) - first_), boxSize_(p.box_size), splitScale_(p.asmth * p.box_size / p.pm_grid),
      assignment_(p.pm_assignment), interlaced_(p.pm_interlace)
{
    const int n = int(n_);
    k_.resize(size_t(n));
    axisFactor_.resize(size_t(n));
    for (int i = 0; i < n; ++i)
    {
        const PmAxisFactor f   = pmAxisFactor(i, n, boxSize_, splitScale_, assignment_);
        k_[size_t(i)]          = f.k;
        axisFactor_[size_t(i)] = f.factor;
    }
    const int64_t half = n / 2 + 1;
    std::vector<int64_t> firsts;
    for (int r = 0; r <= comm_.size(); ++r) firsts.push_back(firstPlane(r));
    arrays_    = std::make_unique<Arrays>(n_, planes().heldPlanes(), own_);
    buffers_   = std::make_unique<Buffers>();
    plans_     = std::make_unique<Plans>(n);
    transpose_ = std::make_unique<Transpose>(comm_, n_, firsts);
    ghosts_    = ghostPlanes(n_, pmStencilWidth(assignment_), firsts);
    Plans& t   = *plans_;
    for (int64_t s = 0; s < own_; ++s)
    {
        double* r  = arrays_->real.get() + s * n_ * n_;
        Complex* c = arrays_->planes.get() + s * n_ * half;
        t.planeForward.prepare(r, c);
        t.planeBackward.prepare(c, r);
        Complex* row = arrays_->rows.get() + s * n_ * half;
        t.rowForward.prepare(row, row);
        t.rowBackward.prepare(row, row);
    }
}

DistributedMesh::~DistributedMesh() = default;

int64_t DistributedMesh::firstPlane(int r) const { return std::min<int64_t>(n_, int64_t(r) * block_); }

int DistributedMesh::ownerOf(int64_t plane) const { return int(plane / block_); }

PmPlanes DistributedMesh::planes() const
{
    return {n_, double(n_) / boxSize_, pmStencilWidth(assignment_), first_, own_, false};
}

int64_t DistributedMesh::heldDoubles() const
{
    const Arrays& a = *arrays_;
    return a.real.size() + 2 * (a.planes.size() + a.rows.size() + a.potential.size());
}

void DistributedMesh::assignAndSum(const Vec3d* pos, const double* mass, int64_t n)
{
    timings_ = RankMeshTimings{};
    Stopwatch clock;
    checkPmBodies(pos, mass, n, boxSize_);
    const double L = boxSize_;
    if (interlaced_)
    {
        const double halfCell = 0.5 * L / double(n_);
        shifted_.resize(size_t(n));
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; ++i) shifted_[size_t(i)] = pmShiftedPosition(pos[i], halfCell, L);
    }
    timings_.assign = clock.lap();
    assignOnSlabs(pos, mass, n);
    clock.lap();
    const double localMass = deterministicSum<double>(n, [&](int64_t i) { return mass[i]; });
    totalMass_             = comm_.allreduceSumOrdered(localMass);
    timings_.sum += clock.lap();
}

void DistributedMesh::assignOnSlabs(const Vec3d* pos, const double* mass, int64_t n)
{
    Stopwatch clock;
    sendBodies(pos, mass, n);
    const PmPlanes slab = planes();
    pmSortByPlane(slab, receivedPos_.data(), receivedMass_.data(), int64_t(receivedPos_.size()), order_);
    if (assignment_ == MassAssignment::Cic) pmAssignMass<2>(slab, order_, arrays_->real.get());
    else pmAssignMass<3>(slab, order_, arrays_->real.get());
    timings_.assign += clock.lap();
    sumGhostPlanes();
    timings_.sum += clock.lap();
}

// Bodies grouped by owner, index order within an owner: the order they arrive in at every owner is rank order,
// then this order.
void DistributedMesh::sendBodies(const Vec3d* pos, const double* mass, int64_t n)
{
    const size_t ranks          = size_t(comm_.size());
    const double cellsPerLength = double(n_) / boxSize_;
    const bool tsc              = assignment_ == MassAssignment::Tsc;
    std::vector<int32_t>& owner = ownerOfBody_;
    owner.resize(size_t(n));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
    {
        const int64_t plane = tsc ? pmAxisStencil<3>(pos[i].x, cellsPerLength, n_).cell[0]
                                  : pmAxisStencil<2>(pos[i].x, cellsPerLength, n_).cell[0];
        owner[size_t(i)]    = int32_t(ownerOf(plane));
    }
    sendCounts_.assign(ranks, 0);
    for (int64_t i = 0; i < n; ++i) ++sendCounts_[size_t(owner[size_t(i)])];
    std::vector<int64_t> next(ranks, 0);
    for (size_t r = 1; r < ranks; ++r) next[r] = next[r - 1] + sendCounts_[r - 1];
    sendOrder_.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) sendOrder_[size_t(next[size_t(owner[size_t(i)])]++)] = i;
    std::vector<MeshBody>& send = buffers_->bodiesOut;
    send.resize(size_t(n));
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < n; ++j)
    {
        const int64_t i = sendOrder_[size_t(j)];
        send[size_t(j)] = {pos[i], mass[i]};
    }
    std::vector<MeshBody>& received = buffers_->bodiesIn;
    comm_.alltoallv(send, sendCounts_, receivedCounts_, received);
    const int64_t m = int64_t(received.size());
    receivedPos_.resize(size_t(m));
    receivedMass_.resize(size_t(m));
#pragma omp parallel for schedule(static)
    for (int64_t q = 0; q < m; ++q)
    {
        receivedPos_[size_t(q)]  = received[size_t(q)].pos;
        receivedMass_[size_t(q)] = received[size_t(q)].mass;
    }
}

// A slab's ghost planes go to their owners, which add them after their own bodies' masses, in rank order.
void DistributedMesh::sumGhostPlanes()
{
    const int me = comm_.rank(), P = comm_.size();
    const int64_t planeValues = n_ * n_;
    std::vector<double> send;
    std::vector<int64_t> sendCounts(size_t(P), 0), recvCounts;
    for (int owner = 0; owner < P; ++owner)
    {
        for (const GhostPlane& g : ghosts_)
        {
            if (g.rank != me || g.owner != owner) continue;
            const double* plane = arrays_->real.get() + g.heldIndex * planeValues;
            send.insert(send.end(), plane, plane + planeValues);
            sendCounts[size_t(owner)] += planeValues;
        }
    }
    const std::vector<double> received = comm_.alltoallv(send, sendCounts, recvCounts);
    // What arrives is in rank order, each rank's planes in the list's order: the list says where each goes.
    int64_t at = 0;
    for (const GhostPlane& g : ghosts_)
    {
        if (g.owner != me) continue;
        double* plane       = arrays_->real.get() + g.ownerIndex * planeValues;
        const double* ghost = received.data() + at;
#pragma omp parallel for schedule(static)
        for (int64_t c = 0; c < planeValues; ++c) plane[c] += ghost[c];
        at += planeValues;
    }
}

void DistributedMesh::solveAndInterpolate(const double* mass, int64_t n, std::vector<Vec3d>& acc,
                                          std::vector<double>& pot)
{
    solveAndReturn(n, acc, pot);
    if (interlaced_)
    {
        // The shifted mesh's pass, averaged as PmMesh averages it.
        assignOnSlabs(shifted_.data(), mass, n);
        solveAndReturn(n, shiftedAcc_, shiftedPot_);
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; ++i)
        {
            const Vec3d a = acc[size_t(i)], b = shiftedAcc_[size_t(i)];
            pot[size_t(i)] = 0.5 * (pot[size_t(i)] + shiftedPot_[size_t(i)]);
            acc[size_t(i)] = {0.5 * (a.x + b.x), 0.5 * (a.y + b.y), 0.5 * (a.z + b.z)};
        }
    }
    Stopwatch clock;
    pmAddNonPairTerms(1.0, splitScale_, boxSize_, mass, n, totalMass_, pot);
    timings_.interpolate += clock.lap();
}

// Each field is transformed back into the planes of the masses and interpolated to the received bodies before the
// next: the potential and the accelerations along y and z from the potential's spectrum on the planes, then the
// acceleration along x from its own transform along x and transpose.
void DistributedMesh::solveAndReturn(int64_t n, std::vector<Vec3d>& acc, std::vector<double>& pot)
{
    Stopwatch clock;
    transformForward();
    applyGreensFunction();
    timings_.solve += clock.lap();
    buffers_->valuesOut.resize(receivedPos_.size());
    static const std::vector<int> alongXComponents{1}, otherComponents{0, 2, 3};
    for (bool alongX : {false, true})
    {
        rowsBackToPlanes(alongX);
        timings_.solve += clock.lap();
        const std::vector<int>& components = alongX ? alongXComponents : otherComponents;
        for (int component : components)
        {
            planesBack(component);
            timings_.solve += clock.lap();
            fetchGhostField();
            interpolateField(component);
            timings_.interpolate += clock.lap();
        }
    }
    returnValues(n, acc, pot);
    timings_.interpolate += clock.lap();
}

void DistributedMesh::transformForward()
{
    const int64_t half = n_ / 2 + 1;
    Plans& t           = *plans_;
    Arrays& a          = *arrays_;
    Stopwatch clock;
#pragma omp parallel for schedule(static)
    for (int64_t s = 0; s < own_; ++s)
    {
        double* r       = a.real.get() + s * n_ * n_;
        fftw_complex* c = asFftw(a.planes.get() + s * n_ * half);
        fftw_execute_dft_r2c(static_cast<fftw_plan>(t.planeForward.planFor(r, c)), r, c);
    }
    timings_.transforms += clock.lap();
    transpose_->toRows(a.planes.get(), a.rows.get());
    timings_.transposes += clock.lap();
#pragma omp parallel for schedule(static)
    for (int64_t s = 0; s < own_; ++s)
    {
        fftw_complex* row = asFftw(a.rows.get() + s * n_ * half);
        fftw_execute_dft(static_cast<fftw_plan>(t.rowForward.planFor(row, row)), row, row);
    }
    timings_.transforms += clock.lap();
}

// After the transpose the spectrum is held by y rows: row s of this slab is wavenumber index first_ + s along
// y, then x, then z. phi(k) = -4 pi / k^2 exp(-k^2 r_s^2) / W(k)^2 times the masses, over L^3 (PmMesh's).
void DistributedMesh::applyGreensFunction()
{
    const int64_t half = n_ / 2 + 1;
    const double scale = pmGreenScale(1.0, boxSize_);
    Complex* rows      = arrays_->rows.get();
#pragma omp parallel for schedule(static)
    for (int64_t s = 0; s < own_; ++s)
    {
        const int64_t j = first_ + s;
        for (int64_t i = 0; i < n_; ++i)
        {
            Complex* row      = rows + (s * n_ + i) * half;
            const double kxy2 = k_[size_t(i)] * k_[size_t(i)] + k_[size_t(j)] * k_[size_t(j)];
            const double fxy  = scale * axisFactor_[size_t(i)] * axisFactor_[size_t(j)];
            for (int64_t l = 0; l < half; ++l) row[l] *= pmModeFactor(kxy2, fxy, k_[size_t(l)], axisFactor_[size_t(l)]);
        }
    }
    std::copy(rows, rows + own_ * n_ * half, arrays_->potential.get());
}

// a(k) = -i k_axis phi(k), zero on the Nyquist plane of an even axis (pmSlope). The potential's spectrum goes back
// along x and is transposed to planes, where the potential and the accelerations along y and z are each
// transformed back over (y, z) from a copy of each plane (times -i k_y or -i k_z); the acceleration along x needs
// its own transform along x and transpose: three transposes instead of five.
void DistributedMesh::rowsBackToPlanes(bool alongX)
{
    const int64_t half = n_ / 2 + 1, planeSpectrum = n_ * half;
    Plans& t           = *plans_;
    Arrays& a          = *arrays_;
    const Complex* phi = a.potential.get();
    Complex* rows      = a.rows.get();
    Stopwatch clock;
#pragma omp parallel for schedule(static)
    for (int64_t s = 0; s < own_; ++s)
    {
        for (int64_t i = 0; i < n_; ++i)
        {
            const int64_t offset = (s * n_ + i) * half;
            const Complex factor(0.0, -pmSlope(i, n_, k_[size_t(i)]));
            for (int64_t l = 0; l < half; ++l) rows[offset + l] = alongX ? phi[offset + l] * factor : phi[offset + l];
        }
        fftw_complex* row = asFftw(rows + s * planeSpectrum);
        fftw_execute_dft(static_cast<fftw_plan>(t.rowBackward.planFor(row, row)), row, row);
    }
    timings_.transforms += clock.lap();
    transpose_->toPlanes(a.rows.get(), a.planes.get());
    timings_.transposes += clock.lap();
}

// Component 0 (the potential) and 1 (the acceleration along x, after rowsBackToPlanes(true)) are the planes'
// spectra as they are, 2 and 3 those times -i k_y and -i k_z.
void DistributedMesh::planesBack(int component)
{
    const int64_t half = n_ / 2 + 1, planeValues = n_ * n_, planeSpectrum = n_ * half;
    Plans& t   = *plans_;
    Arrays& a  = *arrays_;
    auto slope = [&](int64_t index) { return pmSlope(index, n_, k_[size_t(index)]); };
    Stopwatch clock;
    keepScratchPerThread();
#pragma omp parallel for schedule(static)
    for (int64_t s = 0; s < own_; ++s)
    {
        const Complex* plane = a.planes.get() + s * planeSpectrum;
        Complex* copy        = a.scratch[size_t(threadIndex())]->get();
        double* r            = a.real.get() + s * planeValues;
        for (int64_t j = 0; j < n_; ++j)
        {
            const Complex alongY(0.0, -slope(j));
            for (int64_t l = 0; l < half; ++l)
            {
                const int64_t c = j * half + l;
                copy[c]         = component < 2    ? plane[c]
                                  : component == 2 ? plane[c] * alongY
                                                   : plane[c] * Complex(0.0, -slope(l));
            }
        }
        fftw_execute_dft_c2r(static_cast<fftw_plan>(t.planeBackward.planFor(copy, r)), asFftw(copy), r);
    }
    timings_.transforms += clock.lap();
}

// Made outside the parallel regions (FFTW's planner is not thread-safe), for the thread count of this call.
void DistributedMesh::keepScratchPerThread()
{
    Arrays& a = *arrays_;
    while (a.scratch.size() < size_t(maxThreads()))
    {
        a.scratch.push_back(std::make_unique<FftwArray<Complex>>(n_ * (n_ / 2 + 1), "a mesh plane's spectrum"));
        for (int64_t s = 0; s < own_; ++s)
            plans_->planeBackward.prepare(a.scratch.back()->get(), a.real.get() + s * n_ * n_);
    }
}

// The reverse of sumGhostPlanes: each owner sends the field on its planes that other slabs' clouds reach.
void DistributedMesh::fetchGhostField()
{
    const int me = comm_.rank(), P = comm_.size();
    const int64_t planeValues     = n_ * n_;
    std::vector<double>& send     = buffers_->ghostsOut;
    std::vector<double>& received = buffers_->ghostsIn;
    send.clear();
    std::vector<int64_t> sendCounts(size_t(P), 0), recvCounts;
    for (const GhostPlane& g : ghosts_)
    {
        if (g.owner != me) continue;
        const double* plane = arrays_->real.get() + g.ownerIndex * planeValues;
        send.insert(send.end(), plane, plane + planeValues);
        sendCounts[size_t(g.rank)] += planeValues;
    }
    comm_.alltoallv(send, sendCounts, recvCounts, received);
    // The list is in rank order of the slabs that receive: from each owner, in the list's order.
    std::vector<int64_t> at(size_t(P), 0);
    for (int r = 1; r < P; ++r) at[size_t(r)] = at[size_t(r - 1)] + recvCounts[size_t(r - 1)];
    for (const GhostPlane& g : ghosts_)
    {
        if (g.rank != me) continue;
        const double* from = received.data() + at[size_t(g.owner)];
        std::copy(from, from + planeValues, arrays_->real.get() + g.heldIndex * planeValues);
        at[size_t(g.owner)] += planeValues;
    }
}

void DistributedMesh::interpolateField(int component)
{
    std::vector<MeshValues>& values = buffers_->valuesOut;
    const auto write                = [&](int64_t q, double sum) { values[size_t(q)].value[component] = sum; };
    if (assignment_ == MassAssignment::Cic) pmInterpolate<2>(planes(), order_, arrays_->real.get(), write);
    else pmInterpolate<3>(planes(), order_, arrays_->real.get(), write);
}

void DistributedMesh::returnValues(int64_t n, std::vector<Vec3d>& acc, std::vector<double>& pot)
{
    std::vector<int64_t> counts;
    std::vector<MeshValues>& back = buffers_->valuesIn;
    comm_.alltoallv(buffers_->valuesOut, receivedCounts_, counts, back);
    acc.resize(size_t(n));
    pot.resize(size_t(n));
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < n; ++j)
    {
        const int64_t i = sendOrder_[size_t(j)];
        const double* v = back[size_t(j)].value;
        pot[size_t(i)]  = v[0];
        acc[size_t(i)]  = {v[1], v[2], v[3]};
    }
}

} // namespace octwalk::mpi
