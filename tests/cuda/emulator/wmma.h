// tests/cuda/emulator/wmma.h: nvcuda::wmma's 16x16x16 bf16 fragments on the host (fp32 accumulation),
// with the alignment and leading-dimension rules of the real API checked.
#pragma once
#include <type_traits>
#include <cstdint>
namespace nvcuda::wmma {
struct matrix_a {}; struct matrix_b {}; struct accumulator {}; struct row_major {}; struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment { float x[16][16]; };
template <class F> void fill_fragment(F& f, float v) { for (auto& r : f.x) for (float& e : r) e = v; }
template <class Use, class Layout>
void load_matrix_sync(fragment<Use, 16, 16, 16, __nv_bfloat16, Layout>& f, const __nv_bfloat16* p, unsigned ld) {
    if (reinterpret_cast<uintptr_t>(p) % 32) { fprintf(stderr, "wmma load misaligned\n"); abort(); }
    if (ld % 8) { fprintf(stderr, "wmma ld\n"); abort(); }
    for (int r = 0; r < 16; ++r)
        for (int c = 0; c < 16; ++c)
            f.x[r][c] = __bfloat162float(std::is_same_v<Layout, row_major> ? p[r * ld + c] : p[c * ld + r]);
}
template <class LA, class LB>
void mma_sync(fragment<accumulator, 16, 16, 16, float>& d, const fragment<matrix_a, 16, 16, 16, __nv_bfloat16, LA>& a,
              const fragment<matrix_b, 16, 16, 16, __nv_bfloat16, LB>& b, const fragment<accumulator, 16, 16, 16, float>& c) {
    float t[16][16];
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j) {
            float s = c.x[i][j];
            for (int k = 0; k < 16; ++k) s += a.x[i][k] * b.x[k][j];
            t[i][j] = s;
        }
    std::memcpy(d.x, t, sizeof t);
}
inline void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 16, float>& f, unsigned ld, layout_t l) {
    if (reinterpret_cast<uintptr_t>(p) % 32 || ld % 4 || l != mem_row_major) { fprintf(stderr, "wmma store\n"); abort(); }
    if (threadIdx.x % 32 != 0) return;  // one lane writes: readers must __syncwarp
    for (int r = 0; r < 16; ++r) for (int c = 0; c < 16; ++c) p[r * ld + c] = f.x[r][c];
}
}  // namespace nvcuda::wmma
