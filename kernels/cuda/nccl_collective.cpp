// kernels/cuda/nccl_collective.cpp: NcclCollective: each op = cudaSetDevice, the NCCL call on this
// rank's stream, then a wait that polls the stream and the communicator's async error, so abort()
// from another thread can end a wait on a peer that will never come. Sums are fp32 ncclSum; NCCL's
// order is fixed for a given topology and size, so reruns on the same machine are identical.
#include "kernels/cuda/nccl_collective.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <string>
#include <thread>

#include "core/error.h"
#include "kernels/cuda/cuda_check.h"

namespace arch {

namespace {

void check_cuda(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw Error(std::string("CUDA: ") + what + " failed: " + cudaGetErrorString(e));
}

void check_nccl(ncclResult_t r, const char* what) {
    if (r != ncclSuccess) throw Error(std::string("NCCL: ") + what + " failed: " + ncclGetErrorString(r));
}

class NcclCollective final : public Collective {
public:
    NcclCollective(ncclComm_t comm, int device, int rank, int world)
        : comm_(comm), device_(device), rank_(rank), world_(world) {
        check_cuda(cudaSetDevice(device_), "cudaSetDevice");
        check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
        check_cuda(cudaMalloc(&scratch_, sizeof(float)), "cudaMalloc (barrier scratch)");
    }
    ~NcclCollective() override {
        cudaSetDevice(device_);
        if (comm_ != nullptr) ncclCommDestroy(comm_);
        cudaFree(scratch_);
        cudaStreamDestroy(stream_);
    }

    int rank() const override { return rank_; }
    int world_size() const override { return world_; }

    void all_reduce_sum(float* buf, std::size_t n) override {
        count_all_reduce(n);
        launch("ncclAllReduce", [&] { return ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, comm_, stream_); });
    }
    void reduce_scatter_sum(float* recv, const float* send, std::size_t count) override {
        count_scatter_gather(count);
        launch("ncclReduceScatter",
               [&] { return ncclReduceScatter(send, recv, count, ncclFloat, ncclSum, comm_, stream_); });
    }
    void all_gather(float* recv, const float* send, std::size_t count) override {
        count_scatter_gather(count);
        launch("ncclAllGather", [&] { return ncclAllGather(send, recv, count, ncclFloat, comm_, stream_); });
    }
    void broadcast(float* buf, std::size_t n, int root) override {
        if (root < 0 || root >= world_)
            throw Error("broadcast: root " + std::to_string(root) + " is not a rank of this island of " +
                        std::to_string(world_));
        count_broadcast(n, root);
        launch("ncclBroadcast", [&] { return ncclBroadcast(buf, buf, n, ncclFloat, root, comm_, stream_); });
    }
    void barrier() override {
        launch("barrier", [&] { return ncclAllReduce(scratch_, scratch_, 1, ncclFloat, ncclSum, comm_, stream_); });
    }
    void abort() override { aborted_ = true; }

private:
    template <class Call>
    void launch(const char* what, Call call) {
        if (aborted_ || comm_ == nullptr) throw Error(std::string("NCCL: ") + what + ": the island's collectives were aborted");
        check_cuda(cudaSetDevice(device_), "cudaSetDevice");
        check_nccl(call(), what);
        for (;;) {  // wait, but stay abortable
            const cudaError_t q = cudaStreamQuery(stream_);
            if (q == cudaSuccess) return;
            if (q != cudaErrorNotReady) check_cuda(q, what);
            ncclResult_t async = ncclSuccess;
            check_nccl(ncclCommGetAsyncError(comm_, &async), "ncclCommGetAsyncError");
            if (async != ncclSuccess || aborted_) {
                ncclCommAbort(comm_);
                comm_ = nullptr;
                if (async != ncclSuccess) check_nccl(async, what);
                throw Error(std::string("NCCL: ") + what + ": the island's collectives were aborted");
            }
            std::this_thread::yield();
        }
    }

    ncclComm_t comm_;
    int device_, rank_, world_;
    cudaStream_t stream_ = nullptr;
    float* scratch_ = nullptr;
    std::atomic<bool> aborted_{false};
};

}  // namespace

std::vector<std::unique_ptr<Collective>> make_nccl_collectives(const std::vector<int>& devices) {
    const int n = static_cast<int>(devices.size()), available = cuda::device_count();
    if (n == 0) throw Error("NCCL: an island needs at least one GPU");
    for (int d : devices)
        if (d < 0 || d >= available)
            throw Error("NCCL: GPU " + std::to_string(d) + " does not exist (this machine has " +
                        std::to_string(available) + ")");
    std::vector<ncclComm_t> comms(n);
    check_nccl(ncclCommInitAll(comms.data(), n, devices.data()), "ncclCommInitAll");
    std::vector<std::unique_ptr<Collective>> out;
    for (int r = 0; r < n; ++r) out.push_back(std::make_unique<NcclCollective>(comms[r], devices[r], r, n));
    return out;
}

}  // namespace arch
