// tests/cuda/emulator/emu.cpp: the fiber scheduler of shim.h (one block at a time, every CUDA thread a
// fiber, barriers between fibers, deadlock and out-of-bounds detection) and host versions of
// the CUDA runtime calls the backend makes, linked instead of libcudart.
#include "shim.h"

#include <cstdarg>
#include <cstdlib>
#include <mutex>
#include <sys/mman.h>
#include <string>
#include <unordered_map>

namespace emu {
BlockState* blk = nullptr;
static constexpr std::size_t kStack = 256 * 1024;
static constexpr std::size_t kSmemMax = 227 * 1024;
alignas(256) static unsigned char g_smem[256 * 1024];
static std::size_t g_smem_dyn = 0;      // dynamic smem bytes of the current launch
static std::size_t g_static_top = 0;    // static smem in use (kept apart from the dynamic part)
alignas(256) static unsigned char g_static[64 * 1024];
static std::vector<std::pair<const void*, std::size_t>> g_static_map;
static std::unordered_map<const void*, int> g_smem_attr;
static cudaError_t g_last_error = cudaSuccess;
static std::vector<unsigned char*> g_stacks;
static void (*g_tramp)(void*);
static void* g_closure;
static const char* g_name = "";
static unsigned g_order = 0;  // 0 fwd, 1 rev, 2 rand
static std::mt19937 g_rng(12345);
long long g_launches = 0, g_fibers = 0;

void fail(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::fprintf(stderr, "EMU ERROR in kernel %s (block %u,%u thread %u,%u): ", g_name, blockIdx.x,
                 blockIdx.y, threadIdx.x, threadIdx.y);
    std::vfprintf(stderr, fmt, ap);
    std::fprintf(stderr, "\n");
    va_end(ap);
    std::abort();
}

unsigned char* smem() { return g_smem; }

unsigned char* static_smem(const void* key, std::size_t bytes, std::size_t align) {
    for (auto& [k, off] : g_static_map)
        if (k == key) return g_static + off;
    std::size_t off = (g_static_top + align - 1) / align * align;
    if (off + bytes > sizeof g_static) fail("static shared memory overflow");
    g_static_top = off + bytes;
    if (g_static_top + g_smem_dyn > 48 * 1024 && g_smem_dyn <= 48 * 1024)
        fail("static (%zu) + dynamic (%zu) shared memory > 48 KiB", g_static_top, g_smem_dyn);
    g_static_map.emplace_back(key, off);
    return g_static + off;
}

int lane() { return static_cast<int>((threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y) % 32); }
int warp_id() { return static_cast<int>((threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y) / 32); }

namespace bctx = boost::context::detail;

// The fiber's side of a switch: to the scheduler, which keeps where this fiber resumes; when it is
// resumed, the scheduler's own resume point comes back with it.
static void switch_to_sched() {
    Fiber& f = (*blk->fibers)[blk->cur];
    blk->sched = bctx::jump_fcontext(blk->sched, nullptr).fctx;
    threadIdx = f.tid;  // restore (another fiber ran meanwhile)
}

void yield_wait(Barrier& b) {
    Fiber& f = (*blk->fibers)[blk->cur];
    f.waiting = &b;
    f.wait_gen = b.gen;
    switch_to_sched();
    f.waiting = nullptr;
}

void block_sync() {
    Barrier& b = blk->block_bar;
    if (blk->live != blk->nthreads)
        fail("__syncthreads with %d of %d threads exited", blk->nthreads - blk->live, blk->nthreads);
    if (++b.arrived == blk->live) {
        b.arrived = 0;
        ++b.gen;
        // let the others run first sometimes (random order): yield without waiting
        return;
    }
    yield_wait(b);
}

void warp_sync(unsigned mask, const void* site) {
    const int w = warp_id();
    if (mask != 0xffffffffu) fail("partial warp mask %08x not emulated", mask);
    if (blk->warp_size[w] != 32) fail("full-mask warp op in a warp of %d threads", blk->warp_size[w]);
    if (blk->warp_live[w] != 32) fail("full-mask warp op with %d lanes exited", 32 - blk->warp_live[w]);
    Barrier& b = blk->warp_bar[w];
    if (b.arrived == 0) b.site = site;
    else if (b.site != site) fail("warp lanes at different warp-sync sites (divergent shuffle/syncwarp)");
    if (++b.arrived == 32) {
        b.arrived = 0;
        ++b.gen;
        return;
    }
    yield_wait(b);
}

static void fiber_entry(bctx::transfer_t from) {
    blk->sched = from.fctx;
    g_tramp(g_closure);
    Fiber& f = (*blk->fibers)[blk->cur];
    f.done = true;
    --blk->live;
    --blk->warp_live[warp_id()];
    // a thread leaving while others wait at a barrier it never reached
    if (blk->block_bar.arrived > 0) fail("thread exited while %d wait at __syncthreads", blk->block_bar.arrived);
    if (blk->warp_bar[warp_id()].arrived > 0) fail("lane exited while its warp waits at a warp sync");
    bctx::jump_fcontext(blk->sched, nullptr);  // never resumed: the scheduler sees it done
}

cudaError_t set_smem_attr(const void* f, int bytes) {
    if (bytes > static_cast<int>(kSmemMax)) return cudaErrorInvalidValue;
    g_smem_attr[f] = bytes;
    return cudaSuccess;
}

void record_error(cudaError_t e) {
    if (g_last_error == cudaSuccess) g_last_error = e;
}

void run_kernel(const void* fn, void (*tramp)(void*), void* closure, dim3 grid, dim3 block,
                std::size_t smem_bytes, const char* name) {
    // One kernel at a time in the whole process: an island's device threads share this emulator.
    static std::mutex kernel_mutex;
    std::lock_guard<std::mutex> lock(kernel_mutex);
    g_name = name;
    static bool init = false;
    if (!init) {
        init = true;
        const char* o = std::getenv("EMU_ORDER");
        if (o && !std::strcmp(o, "rev")) g_order = 1;
        if (o && !std::strcmp(o, "rand")) g_order = 2;
    }
    const unsigned nt = block.x * block.y * block.z;
    if (nt == 0 || nt > 1024 || block.z != 1) { std::fprintf(stderr, "EMU: bad block %ux%ux%u in %s\n", block.x, block.y, block.z, name); record_error(cudaErrorInvalidConfiguration); return; }
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535) {
        std::fprintf(stderr, "EMU: bad grid %ux%ux%u in %s\n", grid.x, grid.y, grid.z, name);
        record_error(cudaErrorInvalidConfiguration);
        return;
    }
    if (smem_bytes > 48 * 1024) {
        auto it = g_smem_attr.find(fn);
        if (it == g_smem_attr.end() || static_cast<std::size_t>(it->second) < smem_bytes) {
            std::fprintf(stderr, "EMU: %s launched with %zu bytes of dynamic smem without the attribute\n", name, smem_bytes);
            record_error(cudaErrorInvalidValue);
            return;
        }
    }
    if (smem_bytes > kSmemMax) { record_error(cudaErrorInvalidValue); return; }
    ++g_launches;
    g_tramp = tramp;
    g_closure = closure;
    g_smem_dyn = smem_bytes;
    while (g_stacks.size() < nt) {
        void* p = mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        g_stacks.push_back(static_cast<unsigned char*>(p));
    }
    std::vector<Fiber> fibers(nt);
    std::vector<int> order(nt);
    const int warps = static_cast<int>((nt + 31) / 32);
    std::vector<unsigned char> xchg(static_cast<std::size_t>(warps) * 32 * 8);
    for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
        for (unsigned bx = 0; bx < grid.x; ++bx) {
            blockIdx = {bx, by, bz};
            gridDim = grid;
            blockDim = block;
            std::memset(g_smem, 0xff, std::min<std::size_t>(sizeof g_smem, smem_bytes + 256));
            std::memset(g_static, 0xff, g_static_top ? g_static_top : 256);
            g_static_map.clear();
            g_static_top = 0;
            BlockState b{&fibers, static_cast<int>(nt), static_cast<int>(nt), {}, std::vector<Barrier>(warps), std::vector<int>(warps), std::vector<int>(warps), xchg.data(), {}, 0};
            for (int w = 0; w < warps; ++w) b.warp_size[w] = b.warp_live[w] = std::min<int>(32, nt - 32 * w);
            blk = &b;
            for (unsigned t = 0; t < nt; ++t) {
                Fiber& f = fibers[t];
                f = Fiber{};
                f.tid = {t % block.x, t / block.x, 0};
                f.ctx = bctx::make_fcontext(g_stacks[t] + kStack, kStack, fiber_entry);  // the stack grows down
                order[t] = static_cast<int>(t);
            }
            if (g_order == 1) std::reverse(order.begin(), order.end());
            int remaining = static_cast<int>(nt);
            while (remaining > 0) {
                if (g_order == 2) std::shuffle(order.begin(), order.end(), g_rng);
                bool progress = false;
                for (int t : order) {
                    Fiber& f = fibers[t];
                    if (f.done) continue;
                    if (f.waiting && f.waiting->gen == f.wait_gen) continue;
                    b.cur = t;
                    threadIdx = f.tid;
                    ++g_fibers;
                    f.ctx = bctx::jump_fcontext(f.ctx, nullptr).fctx;
                    progress = true;
                    if (f.done) --remaining;
                }
                if (!progress) fail("deadlock: %d threads wait at barriers that never complete", remaining);
            }
            blk = nullptr;
        }
}
}  // namespace emu

// ---- runtime API ------------------------------------------------------------------------------
namespace {
struct Alloc { std::size_t bytes; };
std::map<const char*, Alloc, std::greater<const char*>> g_allocs;
std::mutex g_allocs_mutex;
constexpr std::size_t kGuard = 256;
}  // namespace

extern "C" {
cudaError_t cudaMalloc(void** p, std::size_t bytes) {
    char* m = static_cast<char*>(std::aligned_alloc(256, (bytes + kGuard * 2 + 255) / 256 * 256));
    std::memset(m, 0xa5, bytes + 2 * kGuard);
    *p = m + kGuard;
    std::lock_guard<std::mutex> lock(g_allocs_mutex);
    g_allocs[m + kGuard] = {bytes};
    return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
    if (!p) return cudaSuccess;
    std::lock_guard<std::mutex> lock(g_allocs_mutex);
    auto it = g_allocs.find(static_cast<char*>(p));
    if (it == g_allocs.end()) { std::fprintf(stderr, "EMU: cudaFree of unknown pointer\n"); std::abort(); }
    char* m = static_cast<char*>(p);
    for (std::size_t i = 0; i < kGuard; ++i) {
        if (static_cast<unsigned char>(m[-1 - static_cast<long>(i)]) != 0xa5 ||
            static_cast<unsigned char>(m[it->second.bytes + i]) != 0xa5) {
            std::fprintf(stderr, "EMU ERROR: device buffer of %zu bytes written out of bounds (guard byte %zu)\n", it->second.bytes, i);
            std::abort();
        }
    }
    g_allocs.erase(it);
    std::free(m - kGuard);
    return cudaSuccess;
}
}
extern "C" {
cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind) { if (n) std::memmove(d, s, n); return cudaSuccess; }
cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind, cudaStream_t) { if (n) std::memmove(d, s, n); return cudaSuccess; }
cudaError_t cudaMemset(void* d, int v, size_t n) { std::memset(d, v, n); return cudaSuccess; }
cudaError_t cudaMemsetAsync(void* d, int v, size_t n, cudaStream_t) { std::memset(d, v, n); return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
cudaError_t cudaGetLastError(void) { cudaError_t e = emu::g_last_error; emu::g_last_error = cudaSuccess; return e; }
const char* cudaGetErrorString(cudaError_t e) { static char b[64]; std::snprintf(b, sizeof b, "emulated cuda error %d", int(e)); return b; }
// Two "GPUs", both host memory (so an island of two can be made as on a real rig, where each rank
// sets its own device); a thread's current device is only remembered.
constexpr int kEmulatedDevices = 2;
static thread_local int t_device = 0;
cudaError_t cudaGetDevice(int* d) { *d = t_device; return cudaSuccess; }
cudaError_t cudaSetDevice(int d) {
    if (d < 0 || d >= kEmulatedDevices) return cudaErrorInvalidDevice;
    t_device = d;
    return cudaSuccess;
}
cudaError_t cudaGetDeviceCount(int* c) { *c = kEmulatedDevices; return cudaSuccess; }
cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int) {
    *v = a == cudaDevAttrMaxSharedMemoryPerBlockOptin ? 232448 : a == cudaDevAttrClockRate ? 1980000 : 0;
    return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t* s) { static char x[16]; *s = reinterpret_cast<cudaStream_t>(x + 1); return cudaSuccess; }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) { return cudaStreamCreate(s); }
cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamQuery(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned) { return cudaSuccess; }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) { static char x[16]; *e = reinterpret_cast<cudaEvent_t>(x); return cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }  // every launch ran when it was made
cudaError_t cudaMallocHost(void** p, std::size_t bytes) { *p = std::malloc(bytes); return *p ? cudaSuccess : cudaErrorMemoryAllocation; }
cudaError_t cudaFreeHost(void* p) { std::free(p); return cudaSuccess; }
cudaError_t cudaEventDestroy(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaRuntimeGetVersion(int* v) { *v = 13000; return cudaSuccess; }
cudaError_t cudaDriverGetVersion(int* v) { *v = 13000; return cudaSuccess; }
}
extern "C" cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
    std::memset(p, 0, sizeof *p);
    std::strcpy(p->name, "emulated sm_90");
    p->major = 9; p->minor = 0; p->multiProcessorCount = 132; p->totalGlobalMem = 141ull << 30;
    return cudaSuccess;
}
