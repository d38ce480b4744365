# bench/gpu_tests.sh: the CUDA test binaries bench/gpu_pack.sh builds and bench/gpu_check.sh runs
# (sourced by both, so the two lists cannot drift apart).
# shellcheck disable=SC2034
gpu_tests="test_bf16_math test_codec_math test_cuda_kernels test_cuda_gemm test_cuda_attention test_device_codec
           test_cuda_model test_cuda_llama_kernels test_cuda_llama test_cuda_memory_plan test_cuda_recompute
           test_cuda_offload test_cuda_island test_cuda_peer_run"
