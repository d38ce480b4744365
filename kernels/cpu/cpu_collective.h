// kernels/cpu/cpu_collective.h: the Collective of one island's CPU "devices": N threads of one process
// that share memory. A CpuCollectiveGroup is the rendezvous: create it once with N, give
// group.rank(r) to the thread that drives device r. Not for GPUs and not across processes.
// Determinism: every sum adds rank 0's value, then rank 1's, ..., rank N-1's, in fp32, for every
// element, so results are bit-identical on every rank and from run to run.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/collective.h"

namespace arch {

class CpuCollectiveGroup : public std::enable_shared_from_this<CpuCollectiveGroup> {
public:
    // What a rank publishes when it enters an op; the others read it after everyone has arrived.
    struct Slot {
        int op = 0;
        std::size_t n = 0;
        int root = 0;
        const float* send = nullptr;
        float* recv = nullptr;
    };

    static std::shared_ptr<CpuCollectiveGroup> create(int world_size);
    int world_size() const { return world_size_; }
    // The Collective of rank r (0 <= r < world_size); each rank's object is used by one thread.
    std::unique_ptr<Collective> rank(int r);

    // Internal to CpuCollective: publish / wait for all ranks / read a rank's slot / fail everyone.
    void publish(int r, const Slot& s) { slots_[r] = s; }
    void sync();
    const Slot& slot(int r) const { return slots_[r]; }
    void abort(const std::string& why);

private:
    explicit CpuCollectiveGroup(int world_size);
    const int world_size_;
    std::vector<Slot> slots_;
    std::mutex mu_;
    std::condition_variable cv_;
    int arrived_ = 0;
    std::uint64_t generation_ = 0;
    bool aborted_ = false;
    std::string abort_reason_;
};

// Convenience: a fresh group of n ranks, one Collective per rank, in rank order.
std::vector<std::unique_ptr<Collective>> make_cpu_collectives(int n);

}  // namespace arch
