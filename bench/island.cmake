# bench/island.cmake: bench_island (CPU islands; NCCL rows where kernels/cuda's NCCL collective is built).
arch_add_bench(bench_island bench_island.cpp)
target_link_libraries(bench_island PRIVATE arch_core arch_kernels_cpu)
if(TARGET arch_kernels_cuda_nccl)
  target_link_libraries(bench_island PRIVATE arch_kernels_cuda_nccl)
  target_compile_definitions(bench_island PRIVATE ARCH_HAVE_NCCL)
endif()
