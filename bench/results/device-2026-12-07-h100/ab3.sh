#!/usr/bin/env bash
# Throwaway A/B/C: main (.wt/main = 051f696), mid (the tree less .wt/var.patch = 38cfba3, built as "var"), new (the tree, HEAD).
# Run from a checkout of 7059a6f on the GPU machine, with .wt/var.patch = `git diff 38cfba3 7059a6f`, .wt/main a copy of
# 051f696 and .devdata/ the two data files (docs/reproduce.md); `LIMIT_S=540 OUT=DIR bash ab3.sh`.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
. bench/device_env.sh
O=$OUT; R=$O/ab.txt
T0=$(date +%s); left() { echo $((${LIMIT_S:-330} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R
mkdir -p /tmp/var && tar --exclude=./.devdata --exclude=./.wt --exclude=./.git -cf - . | tar -xf - -C /tmp/var && (cd /tmp/var && patch -R -s -p1 < $OLDPWD/.wt/var.patch) || echo "var patch failed" | tee -a $R
bld() { { cmake -S $2 -B $1 -DNCCLZ_SIM=OFF -DNCCLZ_MPI=OFF $DEPS && cmake --build $1 -j6 --target "${@:3}"; } > $1.log 2>&1 || { tail -20 $1.log; return 1; }; }
bld /tmp/bmain .wt/main bench_codecs bench_latency & bld /tmp/bnew . ncclz test_gpu_huffbook test_gpu_codecs test_gpu_rea test_gpu_exec bench_codecs bench_latency & bld /tmp/bvar /tmp/var test_gpu_codecs bench_codecs bench_latency & wait
echo "built at $(( $(date +%s) - T0 )) s" | tee -a $R
for b in var new; do
  echo "== $b test_gpu_codecs" >> $O/tests.log; timeout 90 /tmp/b$b/tests/test_gpu_codecs >> $O/tests.log 2>&1; echo "$b test_gpu_codecs rc=$? $(tail -1 $O/tests.log) at $(( $(date +%s) - T0 )) s" | tee -a $R
done
S=$PWD/.devdata/trefht_member57.f32; G=$PWD/.devdata/resnet18_digits_step100_rank0.f32
for r in 1 2; do for b in main new var; do
  [ $(left) -gt 40 ] || break 2
  echo "== bench_latency $b round $r" >> $O/latency.txt
  timeout 40 /tmp/b$b/bench_latency --sci $S --grad $G --runs 50 --batch 20 >> $O/latency.txt 2>&1
done; done
echo "latency done at $(( $(date +%s) - T0 )) s" | tee -a $R
for b in main new var; do
  [ $(left) -gt 40 ] || break
  echo "== bench_codecs $b" >> $O/codecs.txt
  timeout 40 /tmp/b$b/bench_codecs --sci $S --grad $G --codes 8 >> $O/codecs.txt 2>&1
done
echo "codecs done at $(( $(date +%s) - T0 )) s" | tee -a $R
for t in test_gpu_huffbook test_gpu_rea test_gpu_exec; do
  [ $(left) -gt 30 ] || break
  echo "== new $t" >> $O/tests.log; timeout $(( $(left) - 20 )) /tmp/bnew/tests/$t >> $O/tests.log 2>&1; echo "new $t rc=$? $(tail -1 $O/tests.log)" | tee -a $R
done
[ $(left) -gt 40 ] && { timeout $(( $(left) - 15 )) compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/bnew/tests/test_gpu_codecs --quick > $O/sanitize.log 2>&1; echo "memcheck new rc=$?" | tee -a $R; }
grep -E "FAIL" $O/tests.log | head -20 | tee -a $R
grep -E "^==|qsgd.*8-bit" $O/latency.txt | tee -a $R
grep -E "^==|grad +qsgd.*(raw|fixedlen) " $O/codecs.txt | tee -a $R
echo "done at $(( $(date +%s) - T0 )) s" | tee -a $R
