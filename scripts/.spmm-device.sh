set -u
export NCCL_NVLS_ENABLE=0
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name --format=csv,noheader > $R/gpu.txt; cat $R/gpu.txt
SP=$(python3 -c 'import site;print(site.getsitepackages()[0])')
CUBLAS=$(dirname $(find $SP/nvidia -name 'libcublas.so.13*' | head -1))
echo "cublas dir $CUBLAS"
export LD_LIBRARY_PATH=$CUBLAS:${LD_LIBRARY_PATH:-}
export WARPFIT_REQUIRE_GPU=1
timeout 150 .gpu/bin/macro_columns_gpu --test-threads=1 > $R/columns.log 2>&1; echo "columns rc $?"
grep -E "test result|FAILED|panicked" -A5 $R/columns.log | head -30
timeout 240 .gpu/bin/spmm_bench --runs 30 > $R/spmm.md 2> $R/spmm.err; echo "bench rc $?"
cat $R/spmm.md; tail -5 $R/spmm.err
timeout 120 .gpu/bin/warpfit run nn --model alexnet-fc --iters 20 --check > $R/nn.log 2>&1; echo "nn rc $?"
cat $R/nn.log
for d in thread columns:2 columns:8; do
  timeout 60 .gpu/bin/warpfit run nn --model alexnet-fc --iters 20 --decomp $d 2>&1 | grep '^nn:'
done


cd $OUT && tar czf r.tgz r && rm -rf r
