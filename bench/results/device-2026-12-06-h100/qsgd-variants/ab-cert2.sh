# Throwaway A/B: main (.wt/main) against the checked-out tree (QSGD's float32 certificate without
# conversions, decided by warp vote), same machine, alternately.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
. bench/device_env.sh
O=$OUT; R=$O/ab.txt
T0=$(date +%s); left() { echo $((${LIMIT_S:-400} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R
bld() { { cmake -S $2 -B $1 -DNCCLZ_SIM=OFF -DNCCLZ_MPI=OFF $DEPS && cmake --build $1 -j8 --target "${@:3}"; } > $1.log 2>&1 || { tail -20 $1.log; return 1; }; }
bld /tmp/bmain .wt/main bench_codecs bench_latency & bld /tmp/bnew . test_gpu_codecs bench_codecs bench_latency & wait
echo "built at $(( $(date +%s) - T0 )) s" | tee -a $R
timeout 120 /tmp/bnew/tests/test_gpu_codecs > $O/tests.log 2>&1; echo "test_gpu_codecs rc=$? $(tail -1 $O/tests.log)" | tee -a $R
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/bnew/tests/test_gpu_codecs --quick > $O/sanitize.log 2>&1; echo "memcheck rc=$?" | tee -a $R
timeout 90 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/bnew/tests/test_gpu_codecs --race >> $O/sanitize.log 2>&1; echo "racecheck rc=$?" | tee -a $R
grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed" $O/sanitize.log | tee -a $R
S=$PWD/.devdata/trefht_member57.f32; G=$PWD/.devdata/resnet18_digits_step100_rank0.f32
for r in 1 2 3; do for b in main new; do
  [ $(left) -gt 25 ] || break 2
  echo "== bench_latency $b round $r" >> $O/latency.txt
  timeout 60 /tmp/b$b/bench_latency --sci $S --grad $G --runs 50 --batch 20 >> $O/latency.txt 2>&1
done; done
for r in 1 2; do for b in main new; do
  [ $(left) -gt 25 ] || break 2
  echo "== bench_codecs $b round $r" >> $O/codecs.txt
  timeout 60 /tmp/b$b/bench_codecs --sci $S --grad $G --codes 8 >> $O/codecs.txt 2>&1
done; done
grep -E "^==|8-bit codes" $O/latency.txt | tee -a $R
grep -E "^==|qsgd.*(raw|fixedlen) " $O/codecs.txt | tee -a $R
