/* A C client of libg6, linked against libg6.a alone or libg6.so (tests/g6_client/check_link.sh): two
 * bodies on the CPU backend, the force of one on the other against Newton's law. Exit 0 when it holds. */
#include <math.h>
#include <stdio.h>

#include "g6lib.h"

int main(void)
{
    double zero[3] = {0, 0, 0}, far[3] = {2, 0, 0};
    if (g6_open(0) != 0) return 1;
    if (g6_set_ti(0, 0) != 0) return 2;
    if (g6_set_j_particle(0, 0, 0, 0, 0, 1.0, zero, zero, zero, zero, zero) != 0) return 3;
    if (g6_set_j_particle(0, 1, 1, 0, 0, 0.5, zero, zero, zero, zero, far) != 0) return 4;
    int index[1]   = {0};
    double x[1][3] = {{0, 0, 0}}, v[1][3] = {{0, 0, 0}}, h2[1] = {0}, acc[1][3], jerk[1][3], pot[1];
    g6calc_firsthalf(0, 2, 1, index, x, v, NULL, NULL, NULL, 0, h2);
    if (g6calc_lasthalf(0, 2, 1, index, x, v, 0, h2, acc, jerk, pot) != 0) return 5;
    /* m / r^2 = 0.5 / 4 toward +x; pot = -m / r = -0.25 */
    if (fabs(acc[0][0] - 0.125) > 1e-12 || fabs(pot[0] + 0.25) > 1e-12) return 6;
    if (g6_close(0) != 0) return 7;
    printf("libg6 C client: acc = %g, pot = %g\n", acc[0][0], pot[0]);
    return 0;
}
