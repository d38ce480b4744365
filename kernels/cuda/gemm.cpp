// kernels/cuda/gemm.cpp: row-major bf16 GEMMs on cuBLASLt. A row-major M x N matrix is a column-major
// N x M one, so D^T = op(B)^T op(A)^T is what cuBLASLt is asked for (B first). The heuristic's choice
// is cached per shape, type, epilogue and pointer alignment, and every split-K reduction scheme of
// cuBLASLt sums in a fixed order (in place with counters, or through the workspace), so the same
// call gives the same bits every run on one GPU.
#include "kernels/cuda/gemm.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

#include "core/error.h"
#include "kernels/cuda/cuda_check.h"

namespace arch::cuda {

GemmContext::GemmContext(cudaStream_t stream) : stream_(stream) {
    check(cublasLtCreate(&handle_), "cublasLtCreate");
    check(cudaMalloc(&workspace_, workspace_bytes_), "cudaMalloc (cuBLASLt workspace)");
}

GemmContext::~GemmContext() {
    if (workspace_ != nullptr) cudaFree(workspace_);
    if (handle_ != nullptr) cublasLtDestroy(handle_);
}

namespace {

int alignment(const void* p) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    for (int bytes : {16, 8, 4}) if (a % bytes == 0) return bytes;
    return 2;
}

// The descriptors of one call, destroyed at scope end.
struct Descriptors {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    ~Descriptors() {
        if (pref) cublasLtMatmulPreferenceDestroy(pref);
        if (d) cublasLtMatrixLayoutDestroy(d);
        if (b) cublasLtMatrixLayoutDestroy(b);
        if (a) cublasLtMatrixLayoutDestroy(a);
        if (op) cublasLtMatmulDescDestroy(op);
    }
};

template <class T>
void set_op(cublasLtMatmulDesc_t op, cublasLtMatmulDescAttributes_t attr, const T& value) {
    check(cublasLtMatmulDescSetAttribute(op, attr, &value, sizeof(value)), "cublasLtMatmulDescSetAttribute");
}

cublasLtMatrixLayout_t make_layout(cudaDataType_t type, int rows, int cols, long long ld, const GemmBatch& batch,
                                   long long stride) {
    cublasLtMatrixLayout_t layout = nullptr;
    check(cublasLtMatrixLayoutCreate(&layout, type, rows, cols, ld), "cublasLtMatrixLayoutCreate");
    if (batch.count > 1) {
        const int count = batch.count;
        check(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
              "cublasLtMatrixLayoutSetAttribute (batch count)");
        check(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                               sizeof(stride)),
              "cublasLtMatrixLayoutSetAttribute (batch stride)");
    }
    return layout;
}

using Key = std::tuple<int, int, int, bool, bool, bool, int, int, long long, long long, long long, int, int, int, int>;

std::mutex cache_mutex;
std::map<Key, cublasLtMatmulAlgo_t> algo_cache;

}  // namespace

void gemm(GemmContext& ctx, void* D, bool d_fp32, const __nv_bfloat16* A, bool trans_a, const __nv_bfloat16* B,
          bool trans_b, int M, int N, int K, float alpha, float beta, const GemmBatch& batch, Epilogue epilogue,
          const __nv_bfloat16* bias, __nv_bfloat16* aux) {
    if (M <= 0 || N <= 0 || K <= 0 || batch.count <= 0)
        throw Error("gemm: sizes must be positive (M=" + std::to_string(M) + " N=" + std::to_string(N) +
                    " K=" + std::to_string(K) + " batch=" + std::to_string(batch.count) + ")");
    if (epilogue != Epilogue::none && (d_fp32 || beta != 0.0f || bias == nullptr || batch.count != 1))
        throw Error("gemm: an epilogue needs a bf16 output, beta = 0, a bias and no batching");
    if (epilogue == Epilogue::gelu_bias && (aux == nullptr || N % 8 != 0))
        throw Error("gemm: the GELU epilogue needs an aux buffer and N a multiple of 8");

    Descriptors desc;
    check(cublasLtMatmulDescCreate(&desc.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    // cuBLASLt's A is our B, its B is our A (see the top of the file).
    const cublasOperation_t op_a = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_b = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    set_op(desc.op, CUBLASLT_MATMUL_DESC_TRANSA, op_a);
    set_op(desc.op, CUBLASLT_MATMUL_DESC_TRANSB, op_b);
    cublasLtEpilogue_t ep = CUBLASLT_EPILOGUE_DEFAULT;
    if (epilogue == Epilogue::bias) ep = CUBLASLT_EPILOGUE_BIAS;
    if (epilogue == Epilogue::gelu_bias) ep = CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    set_op(desc.op, CUBLASLT_MATMUL_DESC_EPILOGUE, ep);
    if (epilogue != Epilogue::none) {
        const cudaDataType_t bias_type = CUDA_R_16BF;
        set_op(desc.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bias_type);
        set_op(desc.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
    }
    if (epilogue == Epilogue::gelu_bias) {
        const int64_t aux_ld = N;
        set_op(desc.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, static_cast<void*>(aux));
        set_op(desc.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, aux_ld);
    }

    // Column-major shapes: A' = op(B)^T is N x K, B' = op(A)^T is K x M, D' is N x M.
    desc.a = trans_b ? make_layout(CUDA_R_16BF, K, N, K, batch, batch.stride_b)
                     : make_layout(CUDA_R_16BF, N, K, N, batch, batch.stride_b);
    desc.b = trans_a ? make_layout(CUDA_R_16BF, M, K, M, batch, batch.stride_a)
                     : make_layout(CUDA_R_16BF, K, M, K, batch, batch.stride_a);
    const cudaDataType_t d_type = d_fp32 ? CUDA_R_32F : CUDA_R_16BF;
    desc.d = make_layout(d_type, N, M, N, batch, batch.stride_d);

    const int align_a = alignment(B), align_b = alignment(A), align_d = alignment(D);
    const int align_bias = bias != nullptr ? alignment(bias) : 16;
    const Key key{M, N, K, trans_a, trans_b, d_fp32, static_cast<int>(epilogue), batch.count, batch.stride_a,
                  batch.stride_b, batch.stride_d, align_a, align_b, align_d, align_bias};
    cublasLtMatmulAlgo_t algo;
    bool cached = false;
    {
        std::lock_guard<std::mutex> lock(cache_mutex);
        auto it = algo_cache.find(key);
        if (it != algo_cache.end()) {
            algo = it->second;
            cached = true;
        }
    }
    if (!cached) {
        check(cublasLtMatmulPreferenceCreate(&desc.pref), "cublasLtMatmulPreferenceCreate");
        const std::size_t ws = ctx.workspace_bytes();
        check(cublasLtMatmulPreferenceSetAttribute(desc.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
              "cublasLtMatmulPreferenceSetAttribute (workspace)");
        // Our B is cuBLASLt's A and our A its B; D is also the C operand.
        const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> aligns[] = {
            {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, static_cast<uint32_t>(align_a)},
            {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, static_cast<uint32_t>(align_b)},
            {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, static_cast<uint32_t>(align_d)},
            {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, static_cast<uint32_t>(align_d)}};
        for (const auto& [attr, bytes] : aligns)
            check(cublasLtMatmulPreferenceSetAttribute(desc.pref, attr, &bytes, sizeof(bytes)),
                  "cublasLtMatmulPreferenceSetAttribute (alignment)");
        cublasLtMatmulHeuristicResult_t result{};
        int found = 0;
        check(cublasLtMatmulAlgoGetHeuristic(ctx.handle(), desc.op, desc.a, desc.b, desc.d, desc.d, desc.pref, 1,
                                             &result, &found),
              "cublasLtMatmulAlgoGetHeuristic");
        if (found == 0)
            throw Error("gemm: cuBLASLt has no algorithm for M=" + std::to_string(M) + " N=" + std::to_string(N) +
                        " K=" + std::to_string(K) + (d_fp32 ? " (fp32 out)" : " (bf16 out)"));
        algo = result.algo;
        std::lock_guard<std::mutex> lock(cache_mutex);
        algo_cache.emplace(key, algo);
    }
    check(cublasLtMatmul(ctx.handle(), desc.op, &alpha, B, desc.a, A, desc.b, &beta, D, desc.d, D, desc.d, &algo,
                         ctx.workspace(), ctx.workspace_bytes(), ctx.stream()),
          "cublasLtMatmul");
}

}  // namespace arch::cuda
