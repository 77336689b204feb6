# IC: a 128^3 box from octwalk ic cosmo --n-grid 128 --box-size 128 --z-begin 49 --seed 1 --omega0 0.31 --omega-lambda 0.69
#   --hubble-param 0.677 --units gadget-mpc --sigma8 0.81 --ns 0.965 -o ic.gadget; OLD and NEW: the two octwalk binaries
run() { local tag=$1 bin=$2; rm -rf /dev/shm/o_*
  /usr/bin/time -f "%e %M" -o $tag.wall $bin run --comoving --input "$IC" --a-end 0.0205 --dlna 0.025 --theta 0.5 --output-dir /dev/shm/o_$tag --checkpoint-every 0 --backend cpu --timeline > $tag.log 2>&1
  io=$(grep -v "^#" /dev/shm/o_$tag/timing.csv | awk -F, 'NR==2{print $19, $14}')
  echo "$tag wall_maxrss $(cat $tag.wall) final_io_forcewall $io $(md5sum /dev/shm/o_$tag/checkpoint.bin | cut -c1-12)"; }
for i in 2 3; do run plain$i "$OLD"; GLIBC_TUNABLES=glibc.malloc.hugetlb=1 run thp$i "$OLD"; done
