# bench/codecs.cmake: bench_codecs (issue 3): ratio, error and GB/s of every codec beside memcpy.
arch_add_bench(bench_codecs ${CMAKE_CURRENT_LIST_DIR}/bench_codecs.cpp)
target_link_libraries(bench_codecs PRIVATE arch_compression OpenMP::OpenMP_CXX)
