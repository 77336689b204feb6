#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "host/cli/cli.h"

#ifdef OCTWALK_HAVE_MPI
#include <mpi.h>

#include "host/mpi/communicator.h"
#include "host/sim/distributed_run.h"

namespace {

/// The rank count the launcher gave this process: Open MPI's mpirun (OMPI_COMM_WORLD_SIZE), PMIx or PMI
/// launchers (MPICH's hydra, Slurm's srun); 1 when none says, so that a plain `octwalk` never starts MPI.
int launcherRankCount()
{
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"})
    {
        if (const char* v = std::getenv(name))
        {
            const int n = std::atoi(v);
            if (n > 0) return n;
        }
    }
    return 1;
}

/// This process's rank among those of its node (Open MPI's, else MPICH's or Slurm's variable), -1 when none says.
int nodeLocalRank()
{
    for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    {
        if (const char* v = std::getenv(name)) return std::atoi(v);
    }
    return -1;
}

/// The GPUs of this node this process may use: the entries of CUDA_VISIBLE_DEVICES when it is set, else the
/// NVIDIA driver's devices (/proc/driver/nvidia/gpus), as their indices.
std::vector<std::string> nodeGpus()
{
    std::vector<std::string> gpus;
    if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"))
    {
        std::stringstream list(v);
        for (std::string entry; std::getline(list, entry, ',');)
            if (!entry.empty()) gpus.push_back(entry);
        return gpus;
    }
    std::error_code ec;
    int count = 0;
    for (std::filesystem::directory_iterator it("/proc/driver/nvidia/gpus", ec), end; !ec && it != end;
         it.increment(ec))
        ++count;
    for (int k = 0; k < count; ++k) gpus.push_back(std::to_string(k));
    return gpus;
}

/// One rank per GPU: local rank r sees only GPU r mod (the node's GPUs), as its device 0 (the backend uses
/// the current device, device/gpu_solver.h). Set before MPI and CUDA start, which read the variable once.
/// Nothing when the node has no GPU or the launcher gives no local rank.
void pickGpuOfRank()
{
    const int local                     = nodeLocalRank();
    const std::vector<std::string> gpus = nodeGpus();
    if (local < 0 || gpus.empty()) return;
    setenv("CUDA_VISIBLE_DEVICES", gpus[size_t(local) % gpus.size()].c_str(), 1);
}

/// FNV-1a of the command line, which every rank must share (else one rank may fail to parse it while the
/// others wait for it in a collective).
uint64_t commandLineHash(int argc, const char* const* argv)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 1; i < argc; ++i)
    {
        for (const char* c = argv[i]; *c; ++c) h = (h ^ uint64_t(static_cast<unsigned char>(*c))) * 1099511628211ull;
        h = (h ^ 0xffu) * 1099511628211ull;
    }
    return h;
}

/// The first line of what runCli wrote to its error stream, without its "octwalk " prefix.
std::string errorLine(const std::string& text)
{
    std::string line = text.substr(0, text.find('\n'));
    if (line.rfind("octwalk ", 0) == 0) line = line.substr(8);
    return line.empty() ? "failed" : line;
}

/// `octwalk run` on every rank of MPI_COMM_WORLD. Errors that all ranks meet alike (the options, what the
/// run refuses, what rank 0's checks find: host/sim/distributed_run.h's agreeOnRanks) are printed once by
/// rank 0 and every rank returns the code; an error of one rank during the run is printed by that rank and
/// ends the job with MPI_Abort, since the other ranks may wait for it in a collective.
int runOnRanks(int argc, char** argv)
{
    pickGpuOfRank();
    octwalk::mpi::MpiEnvironment env(&argc, &argv);
    octwalk::mpi::Communicator world;
    const int rank = world.rank(), ranks = world.size();
    const std::string where   = "octwalk: rank " + std::to_string(rank) + " of " + std::to_string(ranks) + ": ";
    const std::string command = argc > 1 ? argv[1] : "";
    if (command != "run")
    {
        if (rank == 0) std::cerr << "octwalk " << command << " runs on one rank; start it without mpirun\n";
        return 2;
    }
    const std::vector<uint64_t> lines = world.allgather(commandLineHash(argc, argv));
    for (int r = 1; r < ranks; ++r)
    {
        if (lines[size_t(r)] == lines[0]) continue;
        if (rank == 0) std::cerr << where << "rank " << r << " got another command line than rank 0\n";
        return 2;
    }
    octwalk::setRunCommunicator(&world);
    std::ostream discard(nullptr); // the other ranks' messages and progress would repeat rank 0's
    std::ostringstream err;
    const int rc = octwalk::runCli(argc, argv, rank == 0 ? std::cout : discard, err);
    octwalk::setRunCommunicator(nullptr);
    if (rc == 0 || rc > 128) return rc; // finished, or stopped by a signal with checkpoints on all ranks
    if (!octwalk::distributedWorkStarted())
    {
        if (rank == 0) std::cerr << where << errorLine(err.str()) << "\n";
        return rc;
    }
    std::cerr << where << errorLine(err.str()) << std::endl;
    MPI_Abort(MPI_COMM_WORLD, rc);
    return rc;
}

} // namespace
#endif

int main(int argc, char** argv)
{
#ifdef OCTWALK_HAVE_MPI
    if (launcherRankCount() > 1)
    {
        try
        {
            return runOnRanks(argc, argv);
        }
        catch (const std::exception& e)
        {
            std::cerr << "octwalk: " << e.what() << "\n";
            return 1;
        }
    }
#endif
    return octwalk::runCli(argc, argv, std::cout, std::cerr);
}
