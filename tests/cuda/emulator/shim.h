// tests/cuda/emulator/shim.h: host emulation of the CUDA device features our kernels use, so the GPU
// tests can also run on a machine without a GPU (tests/cuda/emulator/CMakeLists.txt). It checks the
// kernels' index math, synchronisation and numerics, not a GPU: no timing, no real tensor cores, no
// cuBLASLt (gemm_host.cpp stands in for gemm.cpp).
// Each CUDA thread of a block is a fiber (Boost.Context's fcontext: a switch is a few instructions, no
// syscall, unlike ucontext's signal-mask save) run cooperatively in one OS thread; blocks run
// one after the other. __syncthreads / __syncwarp / shuffles are barriers between fibers. The order
// fibers are started (and resumed) in is EMU_ORDER=fwd|rev|rand, so order-dependent races show up as
// differences between runs. Static __shared__ variables are rewritten by gen.py into per-block
// storage filled with 0xff (NaN) at each block start.
#pragma once
#include <cuda_runtime_api.h>
#include <cuda_bf16.h>
#include <vector_types.h>
#include <vector_functions.h>
#include <boost/context/detail/fcontext.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __launch_bounds__
#undef __align__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)

inline uint3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

using std::min;
using std::max;

namespace emu {
void fail(const char* fmt, ...);
struct Barrier {
    int arrived = 0;
    unsigned gen = 0;
    const void* site = nullptr;
};
struct Fiber {
    boost::context::detail::fcontext_t ctx;  // where the fiber resumes
    uint3 tid;
    bool done = false;
    Barrier* waiting = nullptr;
    unsigned wait_gen = 0;
};
struct BlockState {
    std::vector<Fiber>* fibers;
    int nthreads;
    int live;
    Barrier block_bar;
    std::vector<Barrier> warp_bar;
    std::vector<int> warp_live;
    std::vector<int> warp_size;
    unsigned char* xchg;  // [warps][32][8]
    boost::context::detail::fcontext_t sched;  // where the scheduler resumes
    int cur;
};
extern BlockState* blk;
unsigned char* smem();
unsigned char* static_smem(const void* key, std::size_t bytes, std::size_t align);
void yield_wait(Barrier& b);
void block_sync();
void warp_sync(unsigned mask, const void* site);
int lane();
int warp_id();
void run_kernel(const void* fn, void (*trampoline)(void*), void* closure, dim3 grid, dim3 block,
                std::size_t smem_bytes, const char* name);
void record_error(cudaError_t e);

template <class T>
T& shared_var(const void* key) {
    return *reinterpret_cast<T*>(static_smem(key, sizeof(T), alignof(T)));
}

template <class K, class... A>
struct Closure {
    K kernel;
    std::tuple<A...> args;
    static void call(void* p) {
        auto* c = static_cast<Closure*>(p);
        std::apply([&](auto&... a) { c->kernel(a...); }, c->args);
    }
};

template <class K, class... A>
void launch(const char* name, K kernel, dim3 grid, dim3 block, std::size_t smem_bytes, cudaStream_t,
            A... args) {
    Closure<K, A...> c{kernel, std::tuple<A...>(args...)};
    run_kernel(reinterpret_cast<const void*>(kernel), &Closure<K, A...>::call, &c, grid, block,
               smem_bytes, name);
}

template <class T>
T shfl(unsigned mask, T v, int src_lane, int width, int mode, const void* site) {
    static_assert(sizeof(T) <= 8);
    const int l = lane(), w = warp_id();
    unsigned char* x = blk->xchg + static_cast<std::size_t>(w) * 32 * 8;
    std::memcpy(x + l * 8, &v, sizeof(T));
    warp_sync(mask, site);
    int src;
    const int base = l & ~(width - 1);
    if (mode == 0) src = src_lane % width + base;                       // idx
    else if (mode == 1) src = (l ^ src_lane);                            // xor
    else if (mode == 2) src = (l % width) + src_lane < width ? l + src_lane : l;  // down
    else src = (l % width) - src_lane >= 0 ? l - src_lane : l;          // up
    if (src >= blk->warp_size[w]) fail("shuffle reads lane %d of a warp of %d", src, blk->warp_size[w]);
    T r;
    std::memcpy(&r, x + src * 8, sizeof(T));
    warp_sync(mask, site);
    return r;
}
}  // namespace emu

inline void __syncthreads() { emu::block_sync(); }
__attribute__((noinline)) inline void __syncwarp(unsigned mask = 0xffffffffu) {
    emu::warp_sync(mask, __builtin_return_address(0));
}
template <class T>
__attribute__((noinline)) T __shfl_xor_sync(unsigned mask, T v, int m, int width = 32) {
    return emu::shfl(mask, v, m, width, 1, __builtin_return_address(0));
}
template <class T>
__attribute__((noinline)) T __shfl_sync(unsigned mask, T v, int s, int width = 32) {
    return emu::shfl(mask, v, s, width, 0, __builtin_return_address(0));
}
template <class T>
__attribute__((noinline)) T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32) {
    return emu::shfl(mask, v, static_cast<int>(d), width, 2, __builtin_return_address(0));
}

// ---- arithmetic intrinsics: IEEE round to nearest on the host (compile with -ffp-contract=off)
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
// __expf is ex2.approx(x * log2(e)): the rounding of the product is its main error.
inline float __expf(float x) { return exp2f(x * 1.4426950408889634f); }
inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
template <class T> T __ldg(const T* p) { return *p; }
inline unsigned atomicMax(unsigned* p, unsigned v) { unsigned o = *p; if (v > o) *p = v; return o; }
inline int atomicMax(int* p, int v) { int o = *p; if (v > o) *p = v; return o; }
inline unsigned atomicMin(unsigned* p, unsigned v) { unsigned o = *p; if (v < o) *p = v; return o; }
inline unsigned long long atomicMin(unsigned long long* p, unsigned long long v) {
    unsigned long long o = *p; if (v < o) *p = v; return o;
}
inline int atomicAdd(int* p, int v) { int o = *p; *p += v; return o; }

// cudaFuncSetAttribute on a kernel pointer (the template of cuda_runtime.h).
namespace emu { cudaError_t set_smem_attr(const void* f, int bytes); }
template <class T>
cudaError_t cudaFuncSetAttribute(T* f, cudaFuncAttribute a, int v) {
    if (a == cudaFuncAttributeMaxDynamicSharedMemorySize)
        return emu::set_smem_attr(reinterpret_cast<const void*>(f), v);
    return cudaSuccess;
}
#include "wmma.h"
namespace emu {
template <class P, class Q>
P vcast(Q* q) {
    using T = std::remove_cv_t<std::remove_pointer_t<P>>;
    if (reinterpret_cast<std::uintptr_t>(q) % alignof(T)) fail("misaligned %zu-byte vector access at %p", alignof(T), (const void*)q);
    return reinterpret_cast<P>(q);
}
}  // namespace emu
