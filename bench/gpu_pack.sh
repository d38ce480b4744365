#!/usr/bin/env bash
# bench/gpu_pack.sh: prepares, on a CPU machine with the CUDA toolkit, what bench/gpu_check.sh runs on
# a GPU machine that has no network and none of our -dev packages: builds the CUDA targets for one
# architecture into build-gpu/, then packs their stripped binaries and the shared libraries they need
# that are neither glibc, the C++ runtime nor CUDA's (libzmq, libsodium, oneDNN, ...) into
# .gpu/pack.tar.xz (ignored by git; about 16 MB, inside the 64 MiB a device call carries). It also records the CPU reference of gpu_check.sh's 300-step run.
# Usage: bash bench/gpu_pack.sh [cuda architecture, default 90 (H100/H200)]
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:-90}
source bench/gpu_tests.sh
tests=$gpu_tests
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" -DARCH_TESTS=ON \
    -DARCH_BENCH=ON -DARCH_GUI=OFF >/dev/null
# shellcheck disable=SC2086
cmake --build build-gpu -j "$(nproc)" --target archipelago bench_gpu_train $tests

stage=build-gpu/pack
rm -rf "$stage" .gpu
mkdir -p "$stage/bin" "$stage/lib" .gpu
for b in archipelago bench_gpu_train $tests; do
    strip -o "$stage/bin/$b" "build-gpu/bin/$b"
done
# The libraries a bare CUDA image may lack: everything the binaries load except glibc, the C++ and
# OpenMP runtimes' own (the image's are newer) and CUDA's, which the GPU machine brings.
ldd "$stage"/bin/* | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
    grep -vE '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*|libstdc\+\+|libgcc_s)\.so|/usr/local/cuda|libcuda\.so|libnccl|libcublas|libcudart' |
    while read -r lib; do cp -L "$lib" "$stage/lib/"; done
tar -C "$stage" -cf - bin lib | xz -T "$(nproc)" -6 >.gpu/pack.tar.xz
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >>.git/info/exclude
du -sh "$stage/bin" "$stage/lib" .gpu/pack.tar.xz

# The CPU reference of the 300-step curve gpu_check.sh compares the GPU's against (same seed, config
# and data; fp32 on the CPU against bf16 on the GPU). Recorded once: delete a file to record it again.
mkdir -p bench/gpu_reference
for config in tiny llama-tiny; do
    [ -s "bench/gpu_reference/train_cpu_$config.jsonl" ] && continue
    OMP_NUM_THREADS=$(nproc) build-gpu/bin/archipelago train --device cpu --config "$config" --batch 16 --seq-len 128 \
        --steps 300 --val-every 100 --out "build-gpu/train-cpu-$config" --log-format jsonl \
        >"bench/gpu_reference/train_cpu_$config.jsonl"
done
