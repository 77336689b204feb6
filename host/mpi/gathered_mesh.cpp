#include "host/mpi/gathered_mesh.h"

#include <exception>
#include <string>

#include "common/errors.h"
#include "common/pm.h"
#include "device/pm_gpu.h"
#include "host/core/parallel.h"
#include "host/core/timer.h"
#include "host/pm/pm_mesh.h"

namespace octwalk::mpi {

namespace {

constexpr int kFirstRank = 0;

/// The first rank's reason, on every rank ("" when it has none). Collective.
std::string firstRanksReason(const Communicator& comm, const std::string& reason)
{
    const std::vector<char> mine =
        comm.rank() == kFirstRank ? std::vector<char>(reason.begin(), reason.end()) : std::vector<char>{};
    const std::vector<char> all = comm.allgatherv(mine);
    return std::string(all.begin(), all.end());
}

} // namespace

GatheredMesh::GatheredMesh(const Communicator& comm, const Parameters& p, bool onDevice)
    : comm_(comm.comm()), meshSize_(pmCheckedMeshSize(p.box_size, p.pm_grid, p.asmth, 1.0)), boxSize_(p.box_size)
{
    std::string reason;
    if (comm_.rank() == kFirstRank)
    {
        try
        {
            if (onDevice)
            {
                deviceMesh_ =
                    std::make_unique<GpuMesh>(p.box_size, p.pm_grid, p.asmth, p.pm_assignment, 1.0, p.pm_interlace);
            }
            else
            {
                hostMesh_ =
                    std::make_unique<PmMesh>(p.box_size, p.pm_grid, p.asmth, p.pm_assignment, 1.0, p.pm_interlace);
            }
        }
        catch (const std::exception& e)
        {
            reason = e.what();
            if (reason.empty()) reason = "unknown error";
        }
    }
    // Every rank leaves together, so that none waits in the first step's gathering for a rank that has failed.
    reason = firstRanksReason(comm_, reason);
    if (!reason.empty())
    {
        throw BackendError("TreePM's mesh on rank " + std::to_string(kFirstRank) + " (pm_grid " +
                           std::to_string(p.pm_grid) + (onDevice ? ", on its device" : ", on its host") +
                           "): " + reason);
    }
}

GatheredMesh::~GatheredMesh() = default;

void GatheredMesh::assignAndSum(const Vec3d* pos, const double* mass, int64_t n)
{
    timings_ = RankMeshTimings{};
    Stopwatch clock;
    checkPmBodies(pos, mass, n, boxSize_);
    pos_            = pos;
    n_              = n;
    timings_.assign = clock.lap();
}

void GatheredMesh::solveAndInterpolate(const double* mass, int64_t n, std::vector<Vec3d>& acc, std::vector<double>& pot)
{
    if (n != n_)
    {
        throw InputError("GatheredMesh::solveAndInterpolate: " + std::to_string(n) + " bodies on " + comm_.where() +
                         ", where assignAndSum had " + std::to_string(n_));
    }
    Stopwatch clock;
    const std::vector<int64_t> counts = comm_.allgather<int64_t>(n);
    const bool first                  = comm_.rank() == kFirstRank;
    if (first)
    {
        int64_t total = 0;
        for (int64_t c : counts) total += c;
        allPos_.resize(size_t(total));
        allMass_.resize(size_t(total));
    }
    comm_.gatherv(pos_, counts, allPos_.data(), kFirstRank);
    comm_.gatherv(mass, counts, allMass_.data(), kFirstRank);
    timings_.sum = clock.lap();
    if (first) solveOnFirstRank();
    timings_.solve = clock.lap();
    acc.resize(size_t(n));
    pot.resize(size_t(n));
    const bool device = deviceMesh_ != nullptr;
    comm_.scatterv(device ? allAcc_.data() : hostAcc_.data(), counts, acc.data(), kFirstRank);
    comm_.scatterv(device ? allPot_.data() : hostPot_.data(), counts, pot.data(), kFirstRank);
    timings_.interpolate = clock.lap();
    timings_.transposes  = timings_.sum + timings_.interpolate;
}

void GatheredMesh::solveOnFirstRank()
{
    const int64_t total = int64_t(allPos_.size());
    if (deviceMesh_)
    {
        allAcc_.resize(size_t(total));
        allPot_.resize(size_t(total));
        deviceMesh_->computeForces(allPos_.data(), allMass_.data(), total, allAcc_.data(), allPot_.data());
        timings_.transforms = deviceMesh_->timings().solve;
        return;
    }
    hostMesh_->computeForces(allPos_.data(), allMass_.data(), total, hostAcc_, hostPot_);
    timings_.transforms = hostMesh_->timings().fft + hostMesh_->timings().green;
}

} // namespace octwalk::mpi
