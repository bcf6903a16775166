#!/usr/bin/env bash
# Throwaway: which part of k_qsgd_fused's change moved its quantize rate. new = HEAD; x1 = tested rule only;
# x3 = no NaN re-max block; x4 = both; var = 38cfba3.
# Run from a checkout of 7059a6f on the GPU machine, with .wt/var.patch = `git diff 38cfba3 7059a6f` and .devdata/ the
# two data files (docs/reproduce.md); `OUT=DIR bash ab-kernel-parts.sh`.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
. bench/device_env.sh
O=$OUT; R=$O/ab6.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R
mk() { mkdir -p /tmp/$1 && tar --exclude=./.devdata --exclude=./.wt --exclude=./.git -cf - . | tar -xf - -C /tmp/$1; }
mk var && (cd /tmp/var && patch -R -s -p1 < $OLDPWD/.wt/var.patch)
F=codecs/cuda/qsgd_cuda.cu
mk x1 && sed -i 's/if (bk.fast \&\& clean) {/if (false \&\& bk.fast \&\& clean) {/' /tmp/x1/$F
mk x3 && sed -i 's/if (!clean) {/if (false) {/' /tmp/x3/$F
mk x4 && sed -i 's/if (bk.fast \&\& clean) {/if (false \&\& bk.fast \&\& clean) {/; s/if (!clean) {/if (false) {/' /tmp/x4/$F
for v in x1 x3 x4; do diff -q $F /tmp/$v/$F >/dev/null && echo "$v: edit did not apply" | tee -a $R; done
bld() { { cmake -S $2 -B $1 -DNCCLZ_SIM=OFF -DNCCLZ_MPI=OFF $DEPS && cmake --build $1 -j4 --target bench_latency; } > $1.log 2>&1 || { tail -20 $1.log; return 1; }; }
bld /tmp/bnew . & bld /tmp/bvar /tmp/var & bld /tmp/bx1 /tmp/x1 & bld /tmp/bx3 /tmp/x3 & wait; bld /tmp/bx4 /tmp/x4
S=$PWD/.devdata/trefht_member57.f32; G=$PWD/.devdata/resnet18_digits_step100_rank0.f32
for r in 1 2 3; do for b in new var x1 x3 x4; do
  timeout 60 /tmp/b$b/bench_latency --sci $S --grad $G --runs 50 --batch 20 2>&1 | grep -E "8-bit codes" | sed "s/^/$b r$r /" | tee -a $R
done; done
