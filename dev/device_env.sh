# Sourced on a GPU machine without internet access, in a tree copied with .deps/ (dev/pack_deps.sh): unpacks
# Debian's Open MPI into /tmp/ompi and sets the environment the build, ctest and mpirun need there.
#   source dev/device_env.sh
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on shared multi-GPU hosts
OCTWALK_DEPS=$PWD/.deps; export OCTWALK_DEPS
OMPI_ROOT=/tmp/ompi; mkdir -p $OMPI_ROOT
for f in .deps/openmpi/*.deb; do dpkg -x "$f" $OMPI_ROOT; done
export OPAL_PREFIX=$OMPI_ROOT/usr PATH=$OMPI_ROOT/usr/bin:$PATH
export LD_LIBRARY_PATH=$OCTWALK_DEPS/lib/x86_64-linux-gnu:$OMPI_ROOT/usr/lib/x86_64-linux-gnu:$OMPI_ROOT/usr/lib/x86_64-linux-gnu/openmpi/lib:${LD_LIBRARY_PATH:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ln -sf $OMPI_ROOT/usr/bin/mpirun.openmpi $OMPI_ROOT/usr/bin/mpirun
ln -sf $OMPI_ROOT/usr/bin/mpicxx.openmpi $OMPI_ROOT/usr/bin/mpicxx
