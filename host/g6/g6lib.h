#ifndef OCTWALK_G6LIB_H
#define OCTWALK_G6LIB_H
/* @file g6lib.h
 * libg6: the GRAPE-6 application interface (as the GRAPE-6 user's guide defines it and Sapporo and
 * kirin implement it) on octwalk's direct-summation backends. Usable from C, C++ and (through the
 * trailing-underscore symbols, every argument by pointer) Fortran, where x(3,n) is C's double[n][3].
 *
 * Conventions: G = 1 in the units the client passes; a j-particle carries a2 = a/2, j6 = jerk/6 and
 * k18 = snap/18 (the predictor, in double: x_p = x + dt(v + dt(a2 + dt(j6 + dt 0.75 k18))),
 * v_p = v + dt(2 a2 + dt(3 j6 + dt 3 k18)), dt = ti - tj); i-particles arrive already predicted;
 * pot = -sum m / sqrt(r^2 + eps2); an i-particle skips the j-particle with its own index.
 * Neighbours of i: j-particles with unsoftened r^2 < h2[i], itself excluded, listed by index in
 * address order; the nearest neighbour likewise (unsoftened, itself excluded; -1 when none).
 *
 * Environment, read at g6_open:
 *   OCTWALK_G6_BACKEND   = auto (default: the GPU when present, else the CPU with a notice on
 *                          stderr) | gpu (g6_open fails without a device) | cpu
 *   OCTWALK_G6_PRECISION = ds (default: double-single positions, float arithmetic) | double;
 *                          the device kernels only: the CPU backend always computes in double
 *   OCTWALK_G6_JMEM_MAX  = the most j-particles (default 16777216); j-memory grows on demand to the
 *                          highest address set, g6_initialize_jp_buffer is not needed. It holds every
 *                          address below the highest one set, 192 bytes each (on the device backend as
 *                          much again on the device: 2^24 addresses take 3 GB); a call that grows it by
 *                          more than 1 GB says so on stderr first, and memory that cannot be had is an
 *                          error naming the address
 *   OCTWALK_G6_NPIPES    = what g6_npipes() returns, 1..16384 (default 1024)
 *
 * Errors (calls before g6_open, an address beyond OCTWALK_G6_JMEM_MAX, nj beyond the highest
 * address set, ni > g6_npipes(), NaN or infinite input, finite input whose prediction, acc, jerk or
 * pot overflows double, a device failure) return non-zero and print one line on stderr naming the
 * function, the argument and the particle (for an overflow: the i-particle, or on the CPU backend the
 * j-particle whose prediction overflowed); the library never exits and never throws. g6calc_firsthalf, which returns nothing, hands its error to g6calc_lasthalf.
 * Not thread-safe: one client thread per cluster id, as with the hardware.
 */

#ifdef __cplusplus
extern "C" {
#endif

/** Opens cluster id (0..15) with the backend and precision of the environment; 0 on success. */
int g6_open(int id);
/** Releases the cluster's memory; 0 on success. */
int g6_close(int id);
/** The most i-particles one g6calc call takes. */
int g6_npipes(void);
/** Fixed-point scales of the hardware: accepted, no effect (the backends compute in floating point). */
int g6_set_tunit(double t);
int g6_set_xunit(double x);
/** The time the j-particles are predicted to at the next calculation. */
int g6_set_ti(int id, double ti);
/** Stores j-particle `index` at j-memory `address` (0-based) with its time tj and the scaled
 *  derivatives (dtj: accepted, not used). */
int g6_set_j_particle(int id, int address, int index, double tj, double dtj, double mass, double k18[3], double j6[3],
                      double a2[3], double v[3], double x[3]);
/** Starts forces on ni i-particles from j-memory [0, nj); aold, j6old, phiold (the hardware's
 *  exponent hints) are not needed and not read. Returns once the work is queued. */
void g6calc_firsthalf(int id, int nj, int ni, int index[], double xi[][3], double vi[][3], double aold[][3],
                      double j6old[][3], double phiold[], double eps2, double h2[]);
/** Waits for the calculation g6calc_firsthalf started (or, without one, computes it now) and writes
 *  acc, jerk and pot; 0 on success. */
int g6calc_lasthalf(int id, int nj, int ni, int index[], double xi[][3], double vi[][3], double eps2, double h2[],
                    double acc[][3], double jerk[][3], double pot[]);
/** As g6calc_lasthalf, plus the index of each i-particle's nearest j-particle in nnbindex. */
int g6calc_lasthalf2(int id, int nj, int ni, int index[], double xi[][3], double vi[][3], double eps2, double h2[],
                     double acc[][3], double jerk[][3], double pot[], int nnbindex[]);
/** Housekeeping of the hardware: accepted, nothing to do (0). */
int g6_initialize_jp_buffer(int id, int size);
/** Uploads the j-particles set since the last calculation now (they are uploaded before a calculation anyway). */
int g6_flush_jp_buffer(int id);
/** Forgets all j-particles and any calculation under way. */
int g6_reset(int id);
/** Housekeeping of the hardware: accepted, nothing to do (0). */
int g6_reset_fofpga(int id);
/** Gathers the neighbour lists of the last completed calculation (complete lists: the library has
 *  no list memory to overflow); 0 on success. */
int g6_read_neighbour_list(int id);
/** Copies i-particle ipipe's neighbour list (at most maxlength indices) to list, its full length to
 *  *nblen; returns 1 when the list is longer than maxlength (the first maxlength are copied), 0 otherwise,
 *  -1 on error. */
int g6_get_neighbour_list(int id, int ipipe, int maxlength, int* nblen, int list[]);
/** Lists are always in address order: accepted, no effect. */
void g6_set_neighbour_list_sort_mode(int mode);
/** Accepted, no effect (0): overflow is reported by return codes. */
int g6_set_overflow_flag_test_mode(int aflag, int jflag, int vflag);

/* Fortran: the same functions, trailing underscore, every argument by pointer. */
int g6_open_(int* id);
int g6_close_(int* id);
int g6_npipes_(void);
/* GRAPE-6's Fortran API passes the units as INTEGER (phiGRAPE's initgrape.F: 48): 4 bytes are read. */
int g6_set_tunit_(int* t);
int g6_set_xunit_(int* x);
int g6_set_ti_(int* id, double* ti);
int g6_set_j_particle_(int* id, int* address, int* index, double* tj, double* dtj, double* mass, double k18[3],
                       double j6[3], double a2[3], double v[3], double x[3]);
void g6calc_firsthalf_(int* id, int* nj, int* ni, int index[], double xi[][3], double vi[][3], double aold[][3],
                       double j6old[][3], double phiold[], double* eps2, double h2[]);
int g6calc_lasthalf_(int* id, int* nj, int* ni, int index[], double xi[][3], double vi[][3], double* eps2, double h2[],
                     double acc[][3], double jerk[][3], double pot[]);
int g6calc_lasthalf2_(int* id, int* nj, int* ni, int index[], double xi[][3], double vi[][3], double* eps2, double h2[],
                      double acc[][3], double jerk[][3], double pot[], int nnbindex[]);
int g6_initialize_jp_buffer_(int* id, int* size);
int g6_flush_jp_buffer_(int* id);
int g6_reset_(int* id);
int g6_reset_fofpga_(int* id);
int g6_read_neighbour_list_(int* id);
int g6_get_neighbour_list_(int* id, int* ipipe, int* maxlength, int* nblen, int list[]);
void g6_set_neighbour_list_sort_mode_(int* mode);
int g6_set_overflow_flag_test_mode_(int* aflag, int* jflag, int* vflag);

#ifdef __cplusplus
}
#endif

#endif /* OCTWALK_G6LIB_H */
