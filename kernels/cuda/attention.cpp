// kernels/cuda/attention.cpp: the attention contract of attention.h in plain C++: shape checks, the
// sizes of `saved` and `scratch`, the scratch layout of the unfused path, and the dispatch to the
// launchers in attention_unfused.cu and attention_fused.cu (declared below, nowhere else).
// Layouts: inp (B,T,(NH+2KV)hs) = [q (NH heads) | k (KV heads) | v (KV heads)] per token, head h of
// each part at its columns h*hs; out (B,T,C); hs = C/NH.
#include "kernels/cuda/attention.h"

#include <cstdint>
#include <string>

#include "core/error.h"

namespace arch::cuda {

namespace detail {
// attention_unfused.cu. q, o, dq are (B,NH,T,hs) bf16, k, v, dk, dv (B,KV,T,hs) bf16 (in regions
// sized for NH heads); p (saved) and ds are (B,NH,T,T) bf16; s is (B,NH,T,T) fp32 (scores in
// forward, dP in backward).
void attention_unfused_forward(GemmContext& ctx, __nv_bfloat16* out, __nv_bfloat16* p,
                               __nv_bfloat16* q, __nv_bfloat16* k, __nv_bfloat16* v,
                               __nv_bfloat16* o, float* s, const __nv_bfloat16* inp, int B, int T,
                               int C, int NH, int KV);
void attention_unfused_backward(GemmContext& ctx, __nv_bfloat16* dinp, __nv_bfloat16* q,
                                __nv_bfloat16* k, __nv_bfloat16* v, __nv_bfloat16* dout_p,
                                __nv_bfloat16* dq, __nv_bfloat16* dk, __nv_bfloat16* dv, float* dp,
                                __nv_bfloat16* ds, const __nv_bfloat16* dout,
                                const __nv_bfloat16* inp, const __nv_bfloat16* p, int B, int T,
                                int C, int NH, int KV);
// attention_fused.cu. lse and delta are (B,NH,T) fp32.
void attention_fused_forward(__nv_bfloat16* out, float* lse, const __nv_bfloat16* inp, int B, int T,
                             int C, int NH, int KV, cudaStream_t stream);
void attention_fused_backward(__nv_bfloat16* dinp, float* delta, const __nv_bfloat16* dout,
                              const __nv_bfloat16* inp, const __nv_bfloat16* out, const float* lse,
                              int B, int T, int C, int NH, int KV, cudaStream_t stream);
}  // namespace detail

namespace {

constexpr std::size_t kAlign = 256;  // every scratch region starts on a 256-byte boundary

std::size_t align_up(std::size_t n) {
    return (n + kAlign - 1) / kAlign * kAlign;
}

void check_shape(AttentionKind kind, int B, int T, int C, int NH, int KV) {
    const std::string shape = "B=" + std::to_string(B) + " T=" + std::to_string(T) +
                              " C=" + std::to_string(C) + " NH=" + std::to_string(NH) +
                              " KV=" + std::to_string(KV);
    if (B <= 0 || T <= 0 || C <= 0 || NH <= 0 || C % NH != 0 || KV <= 0 || NH % KV != 0)
        throw Error("attention: bad shape " + shape +
                    ": expected positive sizes with C a multiple of NH and NH a multiple of KV");
    const int hs = C / NH;
    if (kind == AttentionKind::fused && hs != 32 && hs != 64 && hs != 128)
        throw Error("attention (fused): head size " + std::to_string(hs) + " (" + shape +
                    ") is not supported: expected 32, 64 or 128");
    if (kind == AttentionKind::unfused && hs % 8 != 0)
        throw Error("attention (unfused): head size " + std::to_string(hs) + " (" + shape +
                    ") is not supported: expected a multiple of 8");
}

void check_aligned(const void* p, const char* what) {
    if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0)
        throw Error(std::string("attention: ") + what + " is not 16-byte aligned");
}

// The unfused scratch, carved from one allocation in this order (each region 256-byte aligned):
// q, k, v, o (= dO in backward), dq, dk, dv: (B,NH,T,hs) bf16; s: (B,NH,T,T) fp32; ds: (B,NH,T,T)
// bf16.
struct UnfusedScratch {
    __nv_bfloat16 *q, *k, *v, *o, *dq, *dk, *dv;
    float* s;
    __nv_bfloat16* ds;
    std::size_t bytes;
};

UnfusedScratch unfused_scratch(void* base, int B, int T, int C, int NH) {
    const std::size_t n = static_cast<std::size_t>(B) * T * C;  // = B*NH*T*hs
    const std::size_t tt = static_cast<std::size_t>(B) * NH * T * T;
    auto* p = static_cast<unsigned char*>(base);
    std::size_t off = 0;
    auto take = [&](std::size_t bytes) {
        unsigned char* r = p ? p + off : nullptr;
        off += align_up(bytes);
        return r;
    };
    UnfusedScratch s{};
    __nv_bfloat16** halves[] = {&s.q, &s.k, &s.v, &s.o, &s.dq, &s.dk, &s.dv};
    for (__nv_bfloat16** h : halves)
        *h = reinterpret_cast<__nv_bfloat16*>(take(n * sizeof(__nv_bfloat16)));
    s.s = reinterpret_cast<float*>(take(tt * sizeof(float)));
    s.ds = reinterpret_cast<__nv_bfloat16*>(take(tt * sizeof(__nv_bfloat16)));
    s.bytes = off;
    return s;
}

}  // namespace

void check_attention_heads(AttentionKind kind, int C, int NH) {
    check_shape(kind, 1, 1, C, NH, NH);
}

AttentionSizes attention_sizes(AttentionKind kind, int B, int T, int C, int NH) {
    check_shape(kind, B, T, C, NH, NH);
    const std::size_t rows = static_cast<std::size_t>(B) * NH * T;
    if (kind == AttentionKind::fused)
        return {align_up(rows * sizeof(float)), align_up(rows * sizeof(float))};
    return {align_up(rows * T * sizeof(__nv_bfloat16)),
            unfused_scratch(nullptr, B, T, C, NH).bytes};
}

void attention_forward(AttentionKind kind, GemmContext& ctx, __nv_bfloat16* out, void* saved,
                       void* scratch, const __nv_bfloat16* inp, int B, int T, int C, int NH,
                       int KV) {
    check_shape(kind, B, T, C, NH, KV);
    check_aligned(inp, "inp");
    check_aligned(out, "out");
    if (kind == AttentionKind::fused) {
        detail::attention_fused_forward(out, static_cast<float*>(saved), inp, B, T, C, NH, KV,
                                        ctx.stream());
        return;
    }
    const UnfusedScratch s = unfused_scratch(scratch, B, T, C, NH);
    detail::attention_unfused_forward(ctx, out, static_cast<__nv_bfloat16*>(saved), s.q, s.k, s.v,
                                      s.o, s.s, inp, B, T, C, NH, KV);
}

void attention_backward(AttentionKind kind, GemmContext& ctx, __nv_bfloat16* dinp, void* scratch,
                        const __nv_bfloat16* dout, const __nv_bfloat16* inp,
                        const __nv_bfloat16* out, const void* saved, int B, int T, int C, int NH,
                        int KV) {
    check_shape(kind, B, T, C, NH, KV);
    check_aligned(dinp, "dinp");
    check_aligned(dout, "dout");
    check_aligned(inp, "inp");
    check_aligned(out, "out");
    if (kind == AttentionKind::fused) {
        detail::attention_fused_backward(dinp, static_cast<float*>(scratch), dout, inp, out,
                                         static_cast<const float*>(saved), B, T, C, NH, KV,
                                         ctx.stream());
        return;
    }
    const UnfusedScratch s = unfused_scratch(scratch, B, T, C, NH);
    detail::attention_unfused_backward(ctx, dinp, s.q, s.k, s.v, s.o, s.dq, s.dk, s.dv, s.s, s.ds,
                                       dout, inp, static_cast<const __nv_bfloat16*>(saved), B, T, C,
                                       NH, KV);
}

}  // namespace arch::cuda
