#pragma once
/// @file params.h
/// The one home of the force-solver parameters: the struct (defaults and units where declared; N-body
/// units, G = 1 unless gravitational_constant says otherwise) and one table, parameterTable(), that
/// drives validation, JSON, the command line (options, help, restart), the study commands and the
/// checkpoint. Names follow AMUSE/GADGET where they have one.
///
/// Adding a parameter: the member below, one row in parameterTable() (params.cpp), and its test.

#include <string>
#include <variant>
#include <vector>

#include "common/mac.h"
#include "common/treepm.h"

namespace octwalk {

enum class Backend
{
    Auto, ///< GPU when one is present, else CPU
    Cpu,  ///< the CPU twin (OpenMP)
    Gpu,  ///< CUDA; BackendError when no GPU is present
};

/// pm_grid's automatic value (automaticPmGrid): its text is "auto".
constexpr int kPmGridAuto = -1;

/// The largest mesh pm_grid auto takes, reached at 512^3 bodies; larger runs get fewer than 2 N^(1/3) cells unless
/// pm_grid is given. The device's mesh of 1024^3 cells holds three meshes of doubles and cuFFT's work area
/// (device/pm_gpu.h), 25.8 GB besides its 56-64 bytes a body: a 512^3 box's run to z = 0 took at most 95.4 GB of an
/// H200's 141 GB.
constexpr int kPmGridAutoMax = 1024;

struct Parameters
{
    /// theta: a node of size l is accepted when its distance exceeds l / theta (+ delta for Bonsai). (0, 1]
    /// (with theta <= 1 the Bonsai MAC never accepts a node whose box holds a body of the group)
    double opening_angle = 0.5;
    /// Plummer softening length squared, [length^2]. >= 0
    double epsilon_squared = 0.0;
    /// G in the units of positions, masses and velocities. > 0
    double gravitational_constant = 1.0;
    /// A cell with more bodies than this is split (unless at the maximum depth). >= 1
    int n_leaf = 16;
    /// Bodies walked together: the highest cells with at most this many bodies (and at least 1/256 of
    /// their parent's: host/tree/octree.h, kGroupContrast). >= 1
    int n_group = 64;
    /// Merge neighbouring groups (consecutive along the Morton curve) while together they hold at
    /// most n_group bodies: fewer, fuller groups (shorter lists, fuller GPU warps) for slightly
    /// larger group boxes. Off: groups are exactly the cells n_group describes.
    bool merge_groups = true;
    /// Multipole acceptance criterion; Bonsai by default (see common/mac.h for why).
    Mac mac = Mac::Bonsai;
    /// Use the quadrupole moments (false: monopole only, for accuracy studies).
    bool use_quadrupole = true;
    /// Expand the softened potential to second order (the quadrupole's spread term, common/gravity.h
    /// bodyNode, as Bonsai does); false: the traceless quadrupole of the unsoftened potential.
    bool softened_quadrupole = true;
    Backend backend          = Backend::Auto;
    /// GADGET's BoxSize: 0 = isolated (open boundaries); > 0 = a periodic cube [0, box_size)^3 whose
    /// images are summed by Ewald's method (common/ewald.h), [length]. finite, >= 0
    double box_size = 0.0;
    /// Periodic boxes only: the error-controlled opening (common/mac.h, periodicGroupScale) keeps a
    /// group's theta_g^3 (G M / L^2) / |a_g| <= err_tol_force_acc, so a group whose net force is a small
    /// remainder of the box's cancelling pulls gets a smaller opening angle. Under TreePM (pm_grid > 0) it
    /// is instead the tolerance of the short-range walk's node errors against the previous step's |a|
    /// (common/treepm.h, shortRangeNodeErrorSmallEnough, shortRangeNodeTruncationSmallEnough). 0: theta
    /// everywhere. >= 0
    double err_tol_force_acc = 0.002;
    /// An accepted node more than far_field_ratio group radii (|half| of the group's box)
    /// from its group's centre pulls the group through one fourth-order local expansion about the centre
    /// (common/far_field.h: work per group and node instead of per body and node); 0: every node body by
    /// body. In a periodic box it serves the groups that meet each node at its image nearest their centre: under
    /// tree + Ewald those whose Ewald correction is their expansion, under TreePM those that shift each node once,
    /// with the short-range kernel's derivatives and only for nodes whose distance times the group's radius is at
    /// most 2 r_s^2 (the others take each node's image nearest each body). 6 by default: on an H200 at 2^22 it takes walk + forces from 39.2 to
    /// 26.1 ms at Bonsai's accuracy, the error's median and p99 moving by 1-2% (ratio 4 by 29% in p99;
    /// benchmarks/results/gpu_forces/far_field/). 0 or >= 2
    double far_field_ratio = 6.0;
    /// Runs (run, hermite): a diagnostics row whose |dE/E0| exceeds this stops the run with an error (energy
    /// lost or gained far beyond any integration error worth keeping, e.g. an unsoftened collision); 0: no
    /// bound. Isolated systems only: a comoving run's energy is not conserved, a periodic box's E0 may be near 0. >= 0
    double max_energy_error = 0.1;
    /// Periodic boxes: TreePM (GADGET-2's PMGRID), the long-range force from a particle mesh of pm_grid^3 cells
    /// (host/pm/pm_mesh.h) and the tree's short-range force within rcut r_s (common/treepm.h), no Ewald
    /// correction; 0: the tree and Ewald's sum (docs/periodic.md compares them); kPmGridAuto: the mesh
    /// automaticPmGrid gives the bodies (TreePM in a periodic box, nothing in an isolated one). 0, kPmGridAuto, or
    /// 25..32768 with the default asmth and rcut (the cutoff rcut asmth L / pm_grid must be below L / 2)
    int pm_grid = kPmGridAuto;
    /// TreePM's split scale r_s in mesh cells, r_s = asmth L / pm_grid (GADGET-2's ASMTH, 1.25 there). > 0. With the
    /// interlaced mesh, 1.75 keeps the median force error at tree + Ewald's or below, at fewer short-range
    /// interactions than 2 (docs/periodic.md).
    double asmth = 1.75;
    /// TreePM's short-range cutoff in units of r_s (GADGET-2's RCUT, 4.5 there): the pull left out there is
    /// 4.4e-4 of a pair's at the default 6 (1.75e-2 at 4.5). > 0
    double rcut = 6.0;
    /// TreePM's mass assignment and force interpolation on the mesh: TSC by default (4096 uniform bodies on
    /// 32^3: median force error 7.2e-4 against CIC's 5.5e-3, docs/periodic.md).
    MassAssignment pm_assignment = MassAssignment::Tsc;
    /// TreePM: the mean of the mesh's forces and those of a mesh shifted by half a cell (host/pm/pm_mesh.h), whose
    /// assignment aliases cancel the first mesh's: twice the mesh's work for a median force error 2.9 times
    /// smaller on an evolved box (docs/periodic.md).
    bool pm_interlace = true;
    /// Where TreePM's mesh runs: auto, on the device with the GPU backend (device/pm_gpu.h, cuFFT) and on the
    /// host's cores otherwise (host/pm/pm_mesh.h, FFTW); cpu: always on the host; gpu: always on the device. The
    /// two meshes agree to about 1e-14 of the largest force (the order of their sums and the device's rounding).
    /// Under MPI, gpu puts the whole mesh on the first rank's device and cpu cuts it into slabs over the ranks
    /// (host/mpi/distributed_forces.h).
    Backend pm_backend = Backend::Auto;
};

/// The mesh of pm_grid auto for numBodies in p's box: 0 (no mesh) in an isolated system (box_size 0); else two cells
/// per mean interbody spacing, 2 N^(1/3), rounded up to a size whose transforms are fast (2^a 3^b 5^c), at least
/// the smallest such size above 2 rcut asmth (the cutoff below L / 2) and 32, at most kPmGridAutoMax (or that
/// smallest size, if larger). With the default split this is as accurate as tree + Ewald at the 99th percentile
/// (docs/periodic.md). p.pm_grid when it is not kPmGridAuto.
int automaticPmGrid(const Parameters& p, int64_t numBodies);

/// p with pm_grid auto replaced by automaticPmGrid(p, numBodies) in a periodic box; an isolated system keeps auto
/// (it has no mesh either way, and its run.json and checkpoints say what was asked).
Parameters withPmGridFor(Parameters p, int64_t numBodies);

/// The valid values of a numeric parameter: [min, max] with either end open or infinite.
/// Real values must also be finite.
struct Range
{
    double min, max;
    bool minOpen, maxOpen;
};

/// How the command line spells a parameter.
enum class CliForm
{
    Plain,   ///< --option VALUE sets the member (a bool member: --option is a switch that sets it)
    Length,  ///< --option LENGTH sets the member to LENGTH^2 (epsilon -> epsilon_squared)
    Negated, ///< a bool member: --option is a switch that clears it (--monopole -> use_quadrupole)
    OrAuto,  ///< an int member: --option auto sets it to -1, which its text (run.json, checkpoints) reads as auto
};

/// One row of the parameter table.
struct ParameterInfo
{
    /// The member, which also gives the type and (through Parameters{}) the default.
    using Member = std::variant<double Parameters::*, int Parameters::*, bool Parameters::*, Mac Parameters::*,
                                Backend Parameters::*, MassAssignment Parameters::*>;

    const char* name;   ///< snake_case key of toJson, run.json and checkpoints
    const char* option; ///< command-line option, without "--"
    const char* alias;  ///< a second spelling of the option, or nullptr
    CliForm form;
    Member member;
    const char* unit;    ///< "" when dimensionless (of the command-line value)
    Range range;         ///< numeric members only
    const char* help;    ///< for --help, without the range or default
    bool fixedOnRestart; ///< a restart refuses the option (the checkpoint holds it)
    /// Added after files with parameter text were first written: absent from such a file, the parameter
    /// takes its default (parametersFromText) instead of being refused as missing.
    bool defaultWhenAbsent = false;
    /// With defaultWhenAbsent: the value such a file ran with when it is not today's default (its text);
    /// nullptr: the default.
    const char* absentText = nullptr;
};

/// Every solver parameter, in the order of toJson and the checkpoint.
const std::vector<ParameterInfo>& parameterTable();

/// The row of a parameter by name; nullptr when there is none.
const ParameterInfo* findParameter(const std::string& name);

/// Throws ParameterError naming the first parameter out of range and its value.
void validate(const Parameters& p);

/// "must be in (0, 1]", "must be finite and >= 0", "must be 'bonsai' or 'octgrav'", ...
std::string rangeText(const ParameterInfo& row);

/// The value of one parameter as text that parameterFromText reads back exactly (17 digits for reals,
/// true/false, the name of a choice).
std::string parameterText(const ParameterInfo& row, const Parameters& p);

/// Sets one parameter from its text (strict: the whole text, finite reals); ParameterError naming the
/// parameter and the text on anything else. Does not check the range (validate does).
void parameterFromText(const ParameterInfo& row, Parameters& p, const std::string& text);

/// Names of a choice parameter's values ("bonsai", "octgrav"); empty for the other types.
std::vector<std::string> choiceNames(const ParameterInfo& row);

std::string toString(Mac mac);
std::string toString(Backend backend);
/// Parse "octgrav"/"bonsai" and "auto"/"cpu"/"gpu"; ParameterError on anything else.
Mac parseMac(const std::string& name);
Backend parseBackend(const std::string& name);

/// The parameters as one JSON object (for run.json, benchmark and study outputs), in table order.
std::string toJson(const Parameters& p);

/// The parameters as "name=value" lines, one per row in table order (the checkpoint stores these),
/// exact: parametersFromText(toText(p)) == p.
std::string toText(const Parameters& p);

/// Reads toText's lines back. ParameterError naming every unknown, repeated or missing name (a row with
/// defaultWhenAbsent may be absent: it keeps its default), or a line or value that cannot be read. Does
/// not check the ranges (validate does).
Parameters parametersFromText(const std::string& text);

} // namespace octwalk
