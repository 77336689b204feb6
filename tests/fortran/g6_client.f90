! A Fortran client of libg6, as phiGRAPE-style codes call it: the trailing-underscore symbols,
! arguments by reference, x(3,n) arrays. Sets j-particles with Taylor data, predicts the i-particles
! itself, calls g6calc_firsthalf/g6calc_lasthalf and compares with its own direct sum (G = 1).
! Exits with status 0 when every acceleration, jerk and potential agrees to 1e-10.
program g6_client
  implicit none
  integer, parameter :: nj = 600, ni = 50
  integer :: g6_open, g6_close, g6_npipes, g6_set_ti, g6_set_j_particle, g6calc_lasthalf, g6_set_tunit, g6_set_xunit
  integer :: id, address, i, j, k, status, index(ni)
  double precision :: x(3, nj), v(3, nj), a2(3, nj), j6(3, nj), k18(3, nj), tj(nj), m(nj)
  double precision :: xp(3, nj), vp(3, nj), xi(3, ni), vi(3, ni), h2(ni), aold(3, ni), j6old(3, ni), phiold(ni)
  double precision :: acc(3, ni), jerk(3, ni), pot(ni), ra(3), rj(3), rp
  double precision :: ti, dt, eps2, d(3), dv(3), r2, rinv, rv, err, worst
  integer(8) :: seed

  seed = 12345
  ti = 0.25d0
  eps2 = 1.0d-4
  do j = 1, nj
    do k = 1, 3
      x(k, j) = uniform() * 2 - 1
      v(k, j) = uniform() - 0.5d0
      a2(k, j) = 0.1d0 * (uniform() - 0.5d0)
      j6(k, j) = 0.1d0 * (uniform() - 0.5d0)
      k18(k, j) = 0.1d0 * (uniform() - 0.5d0)
    end do
    m(j) = 1.0d0 / nj
    tj(j) = ti - 0.125d0 * uniform()
    ! The predictor of the GRAPE-6 conventions: a2 = a/2, j6 = jerk/6, k18 = snap/18.
    dt = ti - tj(j)
    do k = 1, 3
      xp(k, j) = x(k, j) + dt * (v(k, j) + dt * (a2(k, j) + dt * (j6(k, j) + dt * 0.75d0 * k18(k, j))))
      vp(k, j) = v(k, j) + dt * (2 * a2(k, j) + dt * (3 * j6(k, j) + dt * 3 * k18(k, j)))
    end do
  end do

  id = 0
  if (g6_open(id) /= 0) error stop 'g6_open failed'
  if (g6_npipes() < ni) error stop 'g6_npipes too small'
  ! INTEGER units, as phiGRAPE's initgrape.F passes them.
  if (g6_set_tunit(48) /= 0 .or. g6_set_xunit(48) /= 0) error stop 'g6_set_tunit/g6_set_xunit failed'
  if (g6_set_ti(id, ti) /= 0) error stop 'g6_set_ti failed'
  do j = 1, nj
    address = j - 1
    if (g6_set_j_particle(id, address, j, tj(j), 0.01d0, m(j), k18(:, j), j6(:, j), a2(:, j), v(:, j), x(:, j)) /= 0) &
      error stop 'g6_set_j_particle failed'
  end do
  do i = 1, ni
    index(i) = 3 * i
    xi(:, i) = xp(:, 3 * i)
    vi(:, i) = vp(:, 3 * i)
    h2(i) = 0.01d0
  end do
  aold = 0
  j6old = 0
  phiold = 0
  call g6calc_firsthalf(id, nj, ni, index, xi, vi, aold, j6old, phiold, eps2, h2)
  status = g6calc_lasthalf(id, nj, ni, index, xi, vi, eps2, h2, acc, jerk, pot)
  if (status /= 0) error stop 'g6calc_lasthalf failed'

  worst = 0
  do i = 1, ni
    ra = 0
    rj = 0
    rp = 0
    do j = 1, nj
      if (j == index(i)) cycle
      d = xp(:, j) - xi(:, i)
      dv = vp(:, j) - vi(:, i)
      r2 = sum(d * d) + eps2
      rinv = 1 / sqrt(r2)
      rv = 3 * sum(d * dv) / r2
      ra = ra + m(j) * rinv**3 * d
      rj = rj + m(j) * rinv**3 * (dv - rv * d)
      rp = rp - m(j) * rinv
    end do
    err = max(sqrt(sum((acc(:, i) - ra)**2) / sum(ra**2)), sqrt(sum((jerk(:, i) - rj)**2) / sum(rj**2)), &
              abs(pot(i) - rp) / abs(rp))
    worst = max(worst, err)
  end do
  if (g6_close(id) /= 0) error stop 'g6_close failed'
  print '(a, es10.3)', 'g6_client: largest relative error ', worst
  if (worst > 1.0d-10) error stop 'g6_client: forces differ from the direct sum'

contains

  ! A 64-bit linear congruential generator (Knuth's MMIX constants): the same numbers everywhere.
  double precision function uniform()
    seed = seed * 6364136223846793005_8 + 1442695040888963407_8
    uniform = dble(ishft(seed, -11)) * 2.0d0**(-53)
  end function uniform

end program g6_client
