#pragma once
/// @file mac.h
/// Multipole acceptance criteria. All reduce to one comparison in the walk: a node is accepted
/// for a group when the squared minimum distance from the group's box to the node's centre of
/// mass exceeds the node's squared MAC radius (precomputed by the packer with macRadius2()) times
/// the group's scale 1 + groupHalf.w (0 for every group but under Mac::Relative and, in a periodic
/// box, err_tol_force_acc > 0).

#include <cstdint>

#include "common/ewald.h"
#include "common/hostdevice.h"
#include "common/vec.h"

namespace octwalk {

enum class Mac : int32_t
{
    /// Octgrav's original: accept when d > l / theta.
    Octgrav = 0,
    /// Bonsai's improved Barnes-Hut: accept when d > l / theta + delta, delta = |com - box centre|.
    /// Default: it stays safe when a node's mass sits at one corner of its box (the failure
    /// of the plain criterion described by Salmon & Warren 1994) at almost no extra cost.
    Bonsai = 1,
    /// Bonsai's radius with a per-group opening angle theta_g = theta min(1, (c_ref / c_g)^(1/3)), where
    /// c = phi^2 / |a| measures how much the partial forces cancel: it tends to G M outside a bound
    /// system and grows without bound where the forces cancel (the centre of a cluster), which is
    /// where the relative error of a fixed theta is largest (measured: benchmarks/results/accuracy/mac_study.md).
    /// c_g is estimated at the centre of the group's box with theta kRelativeEstimateTheta, c_ref is
    /// the median of c_g over the groups. The quadrupole's truncation error grows as theta^3.
    Relative = 2,
};

/// Bounds of the relative MAC's per-group factor f_g = theta / theta_g: at least 1 (it only ever
/// tightens Bonsai's criterion, so it is as safe; letting groups with small c relax theta measured
/// worse: a fatter tail on the galaxy model, a higher median on Plummer, mac_study.md), at most
/// kRelativeMaxFactor (a group holding a point with |a| ~ 0 would open the whole tree otherwise).
constexpr float kRelativeMaxFactor = 4.0f;
/// Opening angle of the evaluation that estimates phi and |a| for the relative MAC (or the nominal
/// theta when larger): a few per cent error in c moves theta_g by about a third of that.
constexpr double kRelativeEstimateTheta = 0.8;

/// Cancellation measure phi^2 / |a| of one body's (acceleration, potential); infinite where |a| = 0.
HOST_DEVICE inline float cancellation(F4 accPot)
{
    float a = sqrtf(accPot.x * accPot.x + accPot.y * accPot.y + accPot.z * accPot.z);
    return a > 0.0f ? accPot.w * accPot.w / a : HUGE_VALF;
}

/// The value stored in groupHalf.w under Mac::Relative: f_g^2 - 1 with f_g = (c_g / c_ref)^(1/3)
/// bounded as above, so the squared radius is scaled by f_g^2 (a conservative bound on
/// (l / theta_g + delta)^2 as f_g >= 1, exact for delta = 0).
/// @param cGroup the group's cancellation(), cRef the reference (> 0)
HOST_DEVICE inline float relativeGroupScale(float cGroup, float cRef)
{
    float f = cGroup < HUGE_VALF ? cbrtf(cGroup / cRef) : kRelativeMaxFactor;
    f       = fminf(fmaxf(f, 1.0f), kRelativeMaxFactor);
    return f * f - 1.0f;
}

/// Periodic boxes: the per-group opening angle of the error-controlled criterion (parameter
/// err_tol_force_acc, alpha). In a periodic box every body is pulled by the whole box, G M / L^2 in
/// scale, and its net force is what is left when those pulls cancel; the quadrupole tree's error is
/// a fraction of order theta^3 of the pulls (not of the net force), so the relative error of a group
/// with net force |a_g| grows as theta^3 c_g with c_g = (G M / L^2) / |a_g| (the box's pull over the
/// net force, an absolute measure: the median of phi^2 / |a| of Mac::Relative cannot see a box that
/// cancels everywhere). The criterion keeps theta where theta^3 c_g <= alpha and opens the group to
/// theta_g = (alpha / c_g)^(1/3) elsewhere, GADGET-2's relative criterion (a node's pull times its
/// truncation factor below ErrTolForceAcc times the old |a|) with the box's pull for the node's.
/// |a_g| is the mass-weighted mean of the group's accelerations of the previous step in a run
/// (GravitySolver::setPreviousAccelerations), else estimated at the centre of the group's box with theta
/// kPeriodicEstimateTheta.
constexpr double kPeriodicEstimateTheta = 0.8;
/// Largest factor theta / theta_g (a group whose net force vanishes, as in a perfect lattice, would
/// open every node of the box otherwise). At theta 0.5 the bound is theta 0.22, where a uniform box of
/// 2^15-2^17 bodies, whose groups all reach it, meets the periodic accuracy target, median / p99
/// 2e-4 / 2e-3 against the Ewald sum (README, Periodic boxes).
constexpr float kPeriodicMaxFactor = 2.25f;

/// Steps per unit of the factor theta / theta_g: the factor is rounded up to a multiple of
/// 1/kPeriodicFactorSteps, so that the GPU's estimate, whose float rounding differs from the CPU
/// twin's, almost always gives a group the same factor (and both walks the same lists).
constexpr float kPeriodicFactorSteps = 16.0f;

/// The value stored in groupHalf.w in a periodic box: f_g^2 - 1 with f_g = theta / theta_g =
/// max(1, theta (c_g / alpha)^(1/3)) rounded up to a step, at most kPeriodicMaxFactor.
/// @param accGroup |a_g|, the group's net acceleration (before G): previous step or estimate
/// @param accBox   M / L^2, the box's mass over its side squared (before G)
/// @param theta    the nominal opening angle
/// @param alpha    err_tol_force_acc (> 0)
HOST_DEVICE inline float periodicGroupScale(float accGroup, float accBox, float theta, float alpha)
{
    float f = accGroup > 0.0f ? theta * cbrtf(accBox / (alpha * accGroup)) : kPeriodicMaxFactor;
    f       = fminf(fmaxf(ceilf(f * kPeriodicFactorSteps) / kPeriodicFactorSteps, 1.0f), kPeriodicMaxFactor);
    return f * f - 1.0f;
}

/// Squared MAC radius of a node with tight-box side l (largest extent) and centre-of-mass offset delta.
HOST_DEVICE inline float macRadius2(Mac mac, float l, float delta, float invTheta)
{
    float r = l * invTheta + (mac == Mac::Octgrav ? 0.0f : delta);
    return r * r;
}

/// Squared minimum distance from an axis-aligned box (centre c, half-sizes h) to point p.
HOST_DEVICE inline float boxPointDistance2(Vec3f c, Vec3f h, Vec3f p)
{
    float dx = fmaxf(fabsf(p.x - c.x) - h.x, 0.0f);
    float dy = fmaxf(fabsf(p.y - c.y) - h.y, 0.0f);
    float dz = fmaxf(fabsf(p.z - c.z) - h.z, 0.0f);
    // Evaluated identically on host and device, so both walks take the same decisions.
    return addNoFma(addNoFma(mulNoFma(dx, dx), mulNoFma(dy, dy)), mulNoFma(dz, dz));
}

/// Squared minimum distance from an axis-aligned box to every periodic image of point p. Separable
/// per axis: the interval [c - h, c + h] is nearest to the image of p nearest to c, so this bounds the
/// distance from every point of the box to its own nearest image of p.
HOST_DEVICE inline float boxPointDistance2Periodic(Vec3f c, Vec3f h, Vec3f p, const PeriodicView& box)
{
    Vec3f d  = nearestImage(p - c, box);
    float dx = fmaxf(fabsf(d.x) - h.x, 0.0f);
    float dy = fmaxf(fabsf(d.y) - h.y, 0.0f);
    float dz = fmaxf(fabsf(d.z) - h.z, 0.0f);
    return addNoFma(addNoFma(mulNoFma(dx, dx), mulNoFma(dy, dy)), mulNoFma(dz, dz));
}

/// The node (packed as com xyz + squared MAC radius) is far enough from the group's box (half-sizes
/// xyz, scale - 1 in w) to be used as a multipole by every body of the group. With w = 0 the
/// product is exactly nodeMac.w, so the unscaled MACs take the same decisions as ever.
HOST_DEVICE inline bool acceptNode(F4 nodeMac, F4 groupCenter, F4 groupHalf)
{
    return boxPointDistance2(xyz(groupCenter), xyz(groupHalf), xyz(nodeMac)) >
           mulNoFma(nodeMac.w, addNoFma(1.0f, groupHalf.w));
}

/// The same in a periodic box: every image of the node is far enough from the group's box, so each
/// body may use the image of the node nearest to itself (the force kernels do).
HOST_DEVICE inline bool acceptNode(F4 nodeMac, F4 groupCenter, F4 groupHalf, const PeriodicView& box)
{
    if (box.boxSize == 0.0f) return acceptNode(nodeMac, groupCenter, groupHalf);
    return boxPointDistance2Periodic(xyz(groupCenter), xyz(groupHalf), xyz(nodeMac), box) >
           mulNoFma(nodeMac.w, addNoFma(1.0f, groupHalf.w));
}

} // namespace octwalk
