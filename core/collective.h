// core/collective.h: the Collective interface: the communication ops of one island's devices
// (all-reduce sum, reduce-scatter sum, all-gather, broadcast, barrier) over float buffers in the
// backend's memory. kernels/cpu/cpu_collective (threads, shared memory) and kernels/cuda/nccl_collective
// implement it. It does not move anything between islands (that is net/).
//
// Rendezvous (docs/island.md): one process, one thread per device. The island creates a group of N
// collectives up front (CpuCollectiveGroup for CPU threads, ncclCommInitAll for GPUs), hands rank r's
// object to the thread that drives device r, and every rank then calls the same ops in the same order
// with the same sizes. Calls on one rank are made by one thread at a time. Every op blocks until it is
// complete on this rank and its buffers may be reused.
#pragma once

#include <cstddef>
#include <cstdint>

namespace arch {

class Collective {
public:
    virtual ~Collective() = default;
    virtual int rank() const = 0;
    virtual int world_size() const = 0;

    // In place: buf (n) becomes the elementwise sum over ranks.
    virtual void all_reduce_sum(float* buf, std::size_t n) = 0;
    // recv (count) = sum over ranks q of send_q[rank*count, (rank+1)*count); send holds world*count.
    virtual void reduce_scatter_sum(float* recv, const float* send, std::size_t count) = 0;
    // recv (world*count): slot q receives rank q's send (count).
    virtual void all_gather(float* recv, const float* send, std::size_t count) = 0;
    // buf (n) on every rank becomes root's buf.
    virtual void broadcast(float* buf, std::size_t n, int root) = 0;
    virtual void barrier() = 0;
    // Makes every rank's pending and later ops fail with arch::Error instead of waiting forever; the
    // island calls it when one device's thread fails. Safe to call from any thread, more than once.
    virtual void abort() = 0;

    // Bytes this rank has sent so far, counted as a ring algorithm sends them (what NCCL does between
    // GPUs): all-reduce 2(N-1)/N*n, reduce-scatter and all-gather (N-1)*count, broadcast n from the root.
    std::uint64_t bytes_sent() const { return bytes_sent_; }

protected:
    void count_all_reduce(std::size_t n) { add(2.0 * (world_size() - 1) / world_size() * n); }
    void count_scatter_gather(std::size_t count) { add(static_cast<double>(world_size() - 1) * count); }
    void count_broadcast(std::size_t n, int root) { add(world_size() > 1 && rank() == root ? double(n) : 0.0); }

private:
    void add(double floats) { bytes_sent_ += static_cast<std::uint64_t>(floats * sizeof(float) + 0.5); }
    std::uint64_t bytes_sent_ = 0;
};

}  // namespace arch
