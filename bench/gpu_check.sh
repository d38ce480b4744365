#!/usr/bin/env bash
# bench/gpu_check.sh: the whole check of the CUDA backend on a machine with an NVIDIA GPU, in about
# 8 minutes: `archipelago info`; every CUDA test (per kernel against the CPU reference, whole-model
# gradients of GPT-2 and Llama, save/reload/replay, device codecs, the memory plan, recompute,
# offload, islands over NCCL, a real host and peer); GPT-2 124M and SmolLM-135M training throughput
# with tokens/s, MFU and peak memory for both attention kinds (bench_gpu_train), and GPT-2 124M in
# every memory mode against `archipelago plan`; 300-step runs on the bundled corpus against the CPU's
# curve; the DiLoCo demo with one island on the GPU and two on the CPU; and a per-kernel time profile
# of GPT-2 124M steps (ncu, where the machine has it).
# With .gpu/pack.tar.xz (bench/gpu_pack.sh made it on a CPU machine: binaries and the libraries a
# bare CUDA image lacks) nothing is built; else build-gpu/ is built here for this GPU's architecture.
# Everything printed goes to $OUT/gpu_check.log (or build-gpu/) as well.
# Usage: bash bench/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
log_dir=${OUT:-build-gpu}
mkdir -p "$log_dir"
exec > >(tee "$log_dir/gpu_check.log") 2>&1
start=$(date +%s)
elapsed() { echo "[$(( $(date +%s) - start )) s]"; }
status=0
source bench/gpu_tests.sh
tests=$gpu_tests

if [ -f .gpu/pack.tar.xz ]; then
    pack=/tmp/archipelago-gpu
    rm -rf "$pack" && mkdir -p "$pack" && xz -dc .gpu/pack.tar.xz | tar -C "$pack" -xf - || exit 1
    BIN=$pack/bin
    export ARCH_HOME=$PWD  # the shipped files (the bundled corpus) come from this checkout
    # CUDA's own libraries come from the machine: its toolkit, or the wheels its Python carries.
    cuda_dirs=$(find /usr/local /opt /usr/lib -xdev \( -name 'libcublasLt.so.13*' -o -name 'libnccl.so.2*' \
        -o -name 'libcudart.so.13*' \) -printf '%h\n' 2>/dev/null | sort -u | paste -sd:)
    export LD_LIBRARY_PATH="$cuda_dirs:$pack/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "== prebuilt binaries from .gpu/pack.tar.xz, CUDA libraries from $cuda_dirs $(elapsed)"
    ldd "$BIN/archipelago" "$BIN/test_cuda_island" | grep "not found" && { echo "libraries missing"; exit 1; }
else
    BIN=$PWD/build-gpu/bin
    echo "== build (CMAKE_CUDA_ARCHITECTURES=native) $(elapsed)"
    cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native -DARCH_TESTS=ON \
        -DARCH_BENCH=ON -DARCH_GUI=OFF >build-gpu.configure.log 2>&1 || { cat build-gpu.configure.log; exit 1; }
    # shellcheck disable=SC2086
    cmake --build build-gpu -j "$(nproc)" --target archipelago bench_gpu_train $tests 2>&1 |
        grep -E "error|warning|FAILED" || true
    test -x build-gpu/bin/bench_gpu_train || { echo "build failed"; exit 1; }
fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>/dev/null

echo "== archipelago info $(elapsed)"
"$BIN/archipelago" info || status=1

echo "== GPT-2 124M throughput, then every memory mode at B=16 $(elapsed)"
timeout 200 "$BIN/bench_gpu_train" --config gpt2-124m --vocab 50257 --B 64 --T 1024 --steps 30 --modes 16 || status=1

echo "== SmolLM-135M (Llama family: GQA 9/3, SwiGLU, rope, tied) throughput $(elapsed)"
timeout 120 "$BIN/bench_gpu_train" --config smollm-135m --B 32 --T 2048 --steps 20 || status=1

echo "== CUDA tests $(elapsed)"
for t in $tests; do
    t0=$(date +%s)
    ARCH_BIN_DIR=$BIN OMP_NUM_THREADS=8 timeout 100 "$BIN/$t" >"$log_dir/$t.log" 2>&1
    rc=$?
    echo "-- $t: exit $rc in $(( $(date +%s) - t0 )) s: $(tail -n 2 "$log_dir/$t.log" | tr '\n' ' ')"
    if [ $rc -ne 0 ]; then echo "FAILED: $t"; tail -n 40 "$log_dir/$t.log"; status=1; fi
done
cat "$log_dir"/test_*.log > "$log_dir/cuda_tests.log"; rm -f "$log_dir"/test_*.log

for config in tiny llama-tiny; do
    echo "== real data: $config, bundled corpus, 300 steps on the GPU against the CPU's curve $(elapsed)"
    timeout 120 "$BIN/archipelago" train --device cuda --config "$config" --batch 16 --seq-len 128 --steps 300 \
        --val-every 100 --out "build-gpu/train-gpu-$config" --log-format jsonl >"$log_dir/train_gpu_$config.jsonl" ||
        status=1
    python3 bench/gpu_compare_curves.py "bench/gpu_reference/train_cpu_$config.jsonl" \
        "$log_dir/train_gpu_$config.jsonl" || status=1
done

echo "== DiLoCo demo with peer-1 on the GPU, two on the CPU (θ hashes must agree every round) $(elapsed)"
ARCH_BIN=$BIN ARCH_DEMO_DEVICE=cuda timeout 150 bash scripts/demo.sh >"$log_dir/demo.log" 2>&1 || status=1
tail -n 25 "$log_dir/demo.log"
grep -E "reports θ|\[error\]|\[critical\]" runs/demo/*.log && status=1  # an island out of sync, or a failure
grep -hE "joined|device|θ" runs/demo/peer-1.log | head -5
cp runs/demo/host.log "$log_dir/demo_host.log" 2>/dev/null

ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
if [ -n "$ncu" ] && [ $(( $(date +%s) - start )) -lt 420 ]; then
    echo "== kernel time profile: GPT-2 124M, B=16 T=1024, fused, about three steps after warm-up $(elapsed)"
    timeout $(( 560 - ($(date +%s) - start) )) "$ncu" --clock-control none --metrics gpu__time_duration.sum --launch-skip 2500 --launch-count 1500 \
        --csv --log-file "$log_dir/ncu.csv" "$BIN/bench_gpu_train" --config gpt2-124m --vocab 50257 --B 16 \
        --T 1024 --steps 8 --attention fused >/dev/null 2>&1
    python3 bench/gpu_kernel_profile.py "$log_dir/ncu.csv"
else
    echo "== no kernel profile: ${ncu:-no ncu on this machine}, $(elapsed)"
fi

echo "== done in $(( $(date +%s) - start )) s, status $status"
exit $status
