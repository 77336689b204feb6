// Runs with TreePM forces (box_size > 0, pm_grid > 0): a checkpoint carries the mesh's parameters, and a
// restart continues bit-identically, plain and comoving.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "host/cli/cli.h"
#include "host/core/random.h"
#include "host/io/checkpoint.h"
#include "host/io/snapshot.h"
#include "host/models/models.h"
#include "host/sim/comoving.h"
#include "host/sim/simulation.h"
#include "tests/app/cli_runner.h"

using octwalk::test::CliResult;
using octwalk::test::runOctwalk;

using namespace octwalk;
namespace fs = std::filesystem;

namespace {

bool sameBits(const std::vector<Vec3d>& a, const std::vector<Vec3d>& b)
{
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(Vec3d)) == 0;
}

/// 512 equal masses at rest in the unit box: half at random, half in a Plummer sphere of scale 1/20 about the
/// centre, whose bodies meet within the short-range cutoff.
ParticleSet clusterInARandomBox(int64_t n, uint64_t seed)
{
    ParticleSet p = makePlummer(n, seed);
    Random rng(seed);
    auto wrap = [](double x) {
        const double w = x - std::floor(x);
        return w < 1 ? w : 0.0;
    };
    for (int64_t i = 0; i < n; ++i)
    {
        const Vec3d c = Vec3d{0.5, 0.5, 0.5} + (1.0 / 20) * p.pos[i];
        p.pos[i]  = i % 2 ? Vec3d{rng.uniform(), rng.uniform(), rng.uniform()} : Vec3d{wrap(c.x), wrap(c.y), wrap(c.z)};
        p.vel[i]  = {0, 0, 0};
        p.mass[i] = 1.0 / double(n);
    }
    return p;
}

Parameters treePmParameters()
{
    Parameters p;
    p.box_size        = 1.0;
    p.epsilon_squared = 1e-4;
    p.backend         = Backend::Cpu;
    p.pm_grid         = 16;
    p.asmth           = 1.5;
    p.rcut            = 5;
    p.pm_assignment   = MassAssignment::Cic;
    return p;
}

/// Einstein-de Sitter (Omega_m 1, Omega_Lambda 0, h 0.7).
const Cosmology kEdS{1.0, 0.0, 0.7};

fs::path checkpointPath(const char* what)
{
    return fs::temp_directory_path() / (std::string("octwalk_treepm_") + what + "_" + std::to_string(::getpid()));
}

} // namespace

TEST(TreePmRun, RestartIsBitIdentical)
{
    const ParticleSet start = clusterInARandomBox(512, 7);
    const Parameters p      = treePmParameters();
    Simulation whole(start, p, planSteps(0.0, 0.04, 0.01)), first(start, p, planSteps(0.0, 0.04, 0.01));
    while (!whole.done()) whole.step();
    for (int k = 0; k < 2; ++k) first.step();
    const fs::path ckpt = checkpointPath("plain");
    first.writeCheckpoint(ckpt.string());
    Simulation resumed = Simulation::fromCheckpoint(ckpt.string());
    fs::remove(ckpt);
    fs::remove(ckpt.string() + ".prev");
    const Parameters& q = resumed.solver().parameters();
    EXPECT_EQ(q.pm_grid, 16);
    EXPECT_EQ(q.asmth, 1.5);
    EXPECT_EQ(q.rcut, 5);
    EXPECT_EQ(q.pm_assignment, MassAssignment::Cic);
    EXPECT_EQ(resumed.diagnostics().potential, first.diagnostics().potential);
    while (!resumed.done()) resumed.step();
    ASSERT_NE(resumed.pipeline(), nullptr) << "a TreePM box takes the pipelined step";
    EXPECT_GT(resumed.pipeline()->lastStep().meshSeconds, 0.0) << "the mesh took part";
    EXPECT_TRUE(sameBits(resumed.state().pos, whole.state().pos));
    EXPECT_TRUE(sameBits(resumed.state().vel, whole.state().vel));
    EXPECT_EQ(resumed.diagnostics().total, whole.diagnostics().total);
}

TEST(TreePmRun, ComovingRestartIsBitIdentical)
{
    ComovingSettings s;
    s.cosmology             = kEdS;
    s.aBegin                = 0.1;
    s.aEnd                  = 0.14;
    s.dlna                  = 0.05;
    const ParticleSet start = clusterInARandomBox(512, 5);
    const Parameters p      = treePmParameters();
    Simulation whole(start, p, s), first(start, p, s);
    while (!whole.done()) whole.step();
    for (int k = 0; k < whole.stepIndex() / 2; ++k) first.step();
    const fs::path ckpt = checkpointPath("comoving");
    first.writeCheckpoint(ckpt.string());
    Simulation resumed = Simulation::fromCheckpoint(ckpt.string());
    fs::remove(ckpt);
    fs::remove(ckpt.string() + ".prev");
    ASSERT_TRUE(resumed.comoving());
    while (!resumed.done()) resumed.step();
    EXPECT_EQ(resumed.stepIndex(), whole.stepIndex());
    EXPECT_TRUE(sameBits(resumed.state().pos, whole.state().pos));
    EXPECT_TRUE(sameBits(resumed.state().vel, whole.state().vel));
}

TEST(TreePmCli, AComovingRunTakesTheBoxFromItsInputAndRecordsTheMesh)
{
    // The box's size comes from the file's header after the command line's parameters are read: TreePM must not
    // be refused as if the box were isolated.
    const fs::path base = fs::temp_directory_path() / ("octwalk_treepm_cli_" + std::to_string(::getpid()));
    fs::remove_all(base);
    fs::create_directories(base);
    const std::string input = (base / "box.gadget").string(), out = (base / "run").string();
    ParticleSet bodies = clusterInARandomBox(512, 3);
    bodies.time        = 0.1;
    bodies.boxSize     = 1.0;
    bodies.cosmology   = kEdS;
    writeSnapshot(input, SnapshotFormat::Gadget2, bodies);
    const CliResult run = runOctwalk({"run", "--comoving", "--quiet", "--backend", "cpu", "--input", input.c_str(),
                                      "--a-end", "0.12", "--output-dir", out.c_str()});
    EXPECT_EQ(run.code, 0) << run.err;
    std::ifstream json(base / "run" / "run.json");
    const std::string text((std::istreambuf_iterator<char>(json)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("\"pm_grid\": 32, \"asmth\": 1.75, \"rcut\": 6"), std::string::npos)
        << "TreePM on the automatic mesh is the default (2 N^(1/3) = 16, at least 32): " << text;
    EXPECT_NE(text.find("\"rebuild_every\": 0"), std::string::npos) << "TreePM is pipelined by default: " << text;
    EXPECT_EQ(run.out.find("note: --pm-grid"), std::string::npos) << "32 cells are above 2 N^(1/3) for 512 bodies";
    // --rebuild-every applies to a comoving run: 1 is the classic step; tree + Ewald refuses the pipelined one.
    const std::string classicDir = (base / "classic").string();
    const CliResult classic =
        runOctwalk({"run", "--comoving", "--quiet", "--backend", "cpu", "--input", input.c_str(), "--a-end", "0.12",
                    "--rebuild-every", "1", "--output-dir", classicDir.c_str()});
    EXPECT_EQ(classic.code, 0) << classic.err;
    std::ifstream classicJson(base / "classic" / "run.json");
    const std::string classicText((std::istreambuf_iterator<char>(classicJson)), std::istreambuf_iterator<char>());
    EXPECT_NE(classicText.find("\"rebuild_every\": 1"), std::string::npos) << classicText;
    const CliResult ewald =
        runOctwalk({"run", "--comoving", "--quiet", "--backend", "cpu", "--input", input.c_str(), "--a-end", "0.12",
                    "--pm-grid", "0", "--rebuild-every", "0", "--output-dir", (base / "ewald").string().c_str()});
    EXPECT_NE(ewald.code, 0);
    EXPECT_NE(ewald.err.find("tree + Ewald"), std::string::npos) << ewald.err;
    // A mesh coarser than 2 N^(1/3) cells runs, with one line saying what it costs.
    const CliResult coarse = runOctwalk({"run", "--comoving", "--quiet", "--backend", "cpu", "--input", input.c_str(),
                                         "--a-end", "0.11", "--pm-grid", "12", "--asmth", "1.25", "--rcut", "4.5",
                                         "--output-dir", (base / "coarse").string().c_str()});
    EXPECT_EQ(coarse.code, 0) << coarse.err;
    EXPECT_NE(coarse.out.find("note: --pm-grid 12 is below 2 N^(1/3) = 16 cells per side"), std::string::npos)
        << coarse.out;
    // An isolated run with a mesh is one line naming the value, exit 2.
    const CliResult isolated =
        runOctwalk({"run", "--quiet", "--backend", "cpu", "--model", "plummer", "--n", "256", "--t-end", "0.01",
                    "--pm-grid", "32", "--output-dir", (base / "isolated").string().c_str()});
    EXPECT_EQ(isolated.code, 2);
    EXPECT_NE(isolated.err.find("pm_grid = 32 is invalid with box_size = 0"), std::string::npos) << isolated.err;
    fs::remove_all(base);
}
