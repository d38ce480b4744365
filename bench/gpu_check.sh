#!/usr/bin/env bash
# bench/gpu_check.sh: the whole check of the CUDA backend on a machine with an NVIDIA GPU, in about
# 10 minutes: build for this GPU's architecture, `archipelago info`, the CUDA tests (per kernel against
# the CPU reference, whole-model gradients of GPT-2 and Llama, save/reload/replay, device codecs),
# GPT-2 124M and SmolLM-135M training throughput with tokens/s, MFU and peak memory
# (bench_gpu_train), short real training runs (GPT-2 and Llama shapes) on the bundled corpus, and the
# DiLoCo demo with one island on the GPU. Everything printed is also written to $OUT/gpu_check.log when OUT is set.
# Usage: bash bench/gpu_check.sh [extra bench_gpu_train flags, e.g. --B 16 --T 1024 --steps 50]
set -uo pipefail
cd "$(dirname "$0")/.."
log_dir=${OUT:-build-gpu}
mkdir -p "$log_dir"
exec > >(tee "$log_dir/gpu_check.log") 2>&1
start=$(date +%s)
elapsed() { echo "[$(( $(date +%s) - start )) s]"; }
status=0

echo "== build (CMAKE_CUDA_ARCHITECTURES=native) $(elapsed)"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native -DARCH_TESTS=ON \
    -DARCH_BENCH=ON >build-gpu.configure.log 2>&1 || { cat build-gpu.configure.log; exit 1; }
cmake --build build-gpu -j "$(nproc)" --target archipelago test_bf16_math test_codec_math test_cuda_kernels test_cuda_gemm \
    test_cuda_attention test_device_codec test_cuda_model test_cuda_llama_kernels test_cuda_llama test_cuda_island \
    bench_gpu_train 2>&1 | grep -E "error|warning|FAILED" || true
test -x build-gpu/bin/bench_gpu_train || { echo "build failed"; exit 1; }

echo "== archipelago info $(elapsed)"
build-gpu/bin/archipelago info || status=1

echo "== CUDA tests $(elapsed)"
for t in test_bf16_math test_codec_math test_cuda_kernels test_cuda_gemm test_cuda_attention test_device_codec test_cuda_model \
         test_cuda_llama_kernels test_cuda_llama test_cuda_island; do
    echo "-- $t"
    timeout 180 "build-gpu/bin/$t" || { echo "FAILED: $t"; status=1; }
done

echo "== GPT-2 124M throughput $(elapsed)"
timeout 240 build-gpu/bin/bench_gpu_train --config gpt2-124m --vocab 50257 --B 32 --T 1024 --steps 50 "$@" || status=1

echo "== SmolLM-135M (Llama family: GQA 9/3, SwiGLU, rope, tied) throughput $(elapsed)"
timeout 240 build-gpu/bin/bench_gpu_train --config smollm-135m --B 16 --T 2048 --steps 20 || status=1

echo "== real data: tiny model, bundled corpus, 300 steps on the GPU $(elapsed)"
timeout 120 build-gpu/bin/archipelago train --device cuda --config tiny --batch 16 --seq-len 128 --steps 300 \
    --val-every 100 --out build-gpu/train-check --sample-tokens 40 || status=1
echo "== real data: llama-tiny, bundled corpus, 300 steps on the GPU $(elapsed)"
timeout 120 build-gpu/bin/archipelago train --device cuda --config llama-tiny --batch 16 --seq-len 128 --steps 300 \
    --val-every 100 --out build-gpu/train-check-llama --sample-tokens 40 || status=1

echo "== DiLoCo demo with peer-1 on the GPU, two on the CPU (hashes must agree every round) $(elapsed)"
ARCH_BIN=build-gpu/bin ARCH_DEMO_DEVICE=cuda timeout 120 bash scripts/demo.sh || status=1
grep -E "reports θ|error" runs/demo/*.log && status=1  # an island out of sync, or a failure
grep -E "joined|device" runs/demo/peer-1.log | head -3

echo "== done in $(( $(date +%s) - start )) s, status $status"
exit $status
