#include <array>
#include <mutex>
#include <string>

#include "common/errors.h"
#include "host/g6/g6lib.h"
#include "host/sim/hermite.h"

namespace octwalk {

namespace {

/// The library's cluster ids (GRAPE-6: 0..15); each integrator holds its own, so several may coexist.
constexpr int kClusters = 16;

std::mutex gClusterMutex;
std::array<bool, kClusters> gClusterInUse{};

int acquireCluster()
{
    std::lock_guard<std::mutex> lock(gClusterMutex);
    for (int id = 0; id < kClusters; ++id)
    {
        if (!gClusterInUse[id])
        {
            gClusterInUse[id] = true;
            return id;
        }
    }
    throw BackendError("hermite: all " + std::to_string(kClusters) + " libg6 cluster ids are in use by integrators");
}

void releaseCluster(int id)
{
    std::lock_guard<std::mutex> lock(gClusterMutex);
    gClusterInUse[id] = false;
}

} // namespace

G6Cluster::~G6Cluster()
{
    if (id_ < 0) return;
    if (open_) g6_close(id_);
    releaseCluster(id_);
}

void G6Cluster::open()
{
    id_ = acquireCluster();
    if (g6_open(id_) != 0) throw BackendError("hermite: g6_open(" + std::to_string(id_) + ") failed");
    open_ = true;
}

} // namespace octwalk
