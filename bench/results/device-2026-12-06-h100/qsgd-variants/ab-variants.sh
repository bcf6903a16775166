# Throwaway A/B: main (.wt/main) against the checked-out tree's k_qsgd_fused variants
# (NZ_QF_PIPE, NZ_QF_CERT), same machine, alternately.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
. bench/device_env.sh
O=$OUT; R=$O/ab.txt
T0=$(date +%s); left() { echo $((${LIMIT_S:-540} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R
bld() { # dir src flags targets...
  local d=$1 src=$2 fl=$3; shift 3
  { cmake -S $src -B $d -DNCCLZ_SIM=OFF -DNCCLZ_MPI=OFF $DEPS -DCMAKE_CUDA_FLAGS="$fl" && cmake --build $d -j8 --target "$@"; } > $d.log 2>&1 || { tail -20 $d.log; return 1; }
}
bld /tmp/bmain .wt/main "" bench_codecs bench_latency &
bld /tmp/b00 . "-DNZ_QF_PIPE=0 -DNZ_QF_CERT=0 -DNZ_QD16=0" test_gpu_codecs bench_codecs bench_latency &
bld /tmp/b10 . "-DNZ_QF_PIPE=1 -DNZ_QF_CERT=0" test_gpu_codecs bench_codecs bench_latency &
bld /tmp/b01 . "-DNZ_QF_PIPE=0 -DNZ_QF_CERT=1 -DNZ_QD16=0" test_gpu_codecs bench_codecs bench_latency &
bld /tmp/b11 . "" test_gpu_codecs bench_codecs bench_latency &
wait
echo "built at $(( $(date +%s) - T0 )) s" | tee -a $R
for b in 11 10 01 00; do
  timeout 120 /tmp/b$b/tests/test_gpu_codecs >> $O/tests.log 2>&1; echo "test_gpu_codecs ($b) rc=$?" | tee -a $R
  tail -1 $O/tests.log | tee -a $R
done
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/b11/tests/test_gpu_codecs --quick > $O/sanitize.log 2>&1; echo "memcheck (11) rc=$?" | tee -a $R
timeout 100 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/b11/tests/test_gpu_codecs --race >> $O/sanitize.log 2>&1; echo "racecheck (11) rc=$?" | tee -a $R
grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed" $O/sanitize.log | tee -a $R
S=$PWD/.devdata/trefht_member57.f32; G=$PWD/.devdata/resnet18_digits_step100_rank0.f32
for r in 1 2; do for b in main 00 10 01 11; do
  [ $(left) -gt 30 ] || break 2
  echo "== bench_latency $b round $r ($(left) s left)" >> $O/latency.txt
  timeout 60 /tmp/b$b/bench_latency --sci $S --grad $G --runs 50 --batch 20 >> $O/latency.txt 2>&1
done; done
for b in main 00 10 01 11; do
  [ $(left) -gt 30 ] || break
  echo "== bench_codecs $b ($(left) s left)" >> $O/codecs.txt
  timeout 60 /tmp/b$b/bench_codecs --sci $S --grad $G --codes 8 >> $O/codecs.txt 2>&1
done
grep -E "^==|qsgd:bits=8,bucket=512  |copy" $O/latency.txt | grep -v "raw\|fixedlen\|huffman\|auto" | tee -a $R
grep -E "^==|qsgd.*(raw|fixedlen) " $O/codecs.txt | tee -a $R
