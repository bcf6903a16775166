# Throwaway A/B of k_qsgd_fused: the tree as is, with 3 CTAs an SM, and with each group's codes
# stored as soon as coded (no vote), same machine, alternately.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
. bench/device_env.sh
O=$OUT; R=$O/ab3.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R
mk() { rm -rf /tmp/src$1; mkdir /tmp/src$1; tar --exclude=./.devdata --exclude=./.wt -cf - . | tar -xf - -C /tmp/src$1; }
mk lb3; mk st
python3 - <<'PY'
p='/tmp/srclb3/codecs/cuda/quant_cuda.cu'; s=open(p).read()
a='__global__ void __launch_bounds__(256, 4) k_qsgd_fused'; assert a in s
open(p,'w').write(s.replace(a,'__global__ void __launch_bounds__(256, 3) k_qsgd_fused'))
p='/tmp/srcst/codecs/cuda/quant_cuda.cu'; s=open(p).read()
a='''        c[k].w = nz_qsgd_fast(v[k].w, bk, sd, s, w[3]);
      }'''; assert a in s
s=s.replace(a,'''        c[k].w = nz_qsgd_fast(v[k].w, bk, sd, s, w[3]);
        nz_store4(sym, 4 * (q0 + lane + 32 * k), n, c[k]);
      }''')
a='''                         nz_qsgd_code(v[k].z, m, s, seed, rank, e + 2), nz_qsgd_code(v[k].w, m, s, seed, rank, e + 3));
      }
    }
#pragma unroll
    for (int k = 0; k < V; k++) nz_store4(sym, 4 * (q0 + lane + 32 * k), n, c[k]);'''; assert a in s
s=s.replace(a,'''                         nz_qsgd_code(v[k].z, m, s, seed, rank, e + 2), nz_qsgd_code(v[k].w, m, s, seed, rank, e + 3));
        nz_store4(sym, e, n, c[k]);
      }
    }''')
open(p,'w').write(s)
PY
bld() { { cmake -S $2 -B $1 -DNCCLZ_SIM=OFF -DNCCLZ_MPI=OFF $DEPS && cmake --build $1 -j6 --target test_gpu_codecs bench_latency; } > $1.log 2>&1 || { tail -20 $1.log; return 1; }; }
bld /tmp/bm . & bld /tmp/blb3 /tmp/srclb3 & bld /tmp/bst /tmp/srcst & wait
S=$PWD/.devdata/trefht_member57.f32; G=$PWD/.devdata/resnet18_digits_step100_rank0.f32
for b in lb3 st; do timeout 100 /tmp/b$b/tests/test_gpu_codecs > $O/t$b.log 2>&1; echo "test_gpu_codecs $b rc=$? $(tail -1 $O/t$b.log)" | tee -a $R; done
for r in 1 2 3; do for b in m lb3 st; do
  echo "== $b round $r" >> $O/lat3.txt
  timeout 60 /tmp/b$b/bench_latency --sci $S --grad $G --runs 50 --batch 20 >> $O/lat3.txt 2>&1
done; done
grep -E "^==|8-bit codes" $O/lat3.txt | tee -a $R
