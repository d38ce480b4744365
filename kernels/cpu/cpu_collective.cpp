// kernels/cpu/cpu_collective.cpp: Collective ops over shared memory between the threads of one process.
// Each op: publish pointers, sync (all arrived), read the others' buffers, sync (all reads done), and
// where other ranks' outputs are written, sync once more so no rank leaves before its buffer is full.
// Reductions are split so rank r sums chunk r of the elements, always in rank order 0..N-1.
#include "kernels/cpu/cpu_collective.h"

#include <cstring>

#include "core/error.h"

namespace arch {

namespace {

enum Op { kAllReduce = 1, kReduceScatter, kAllGather, kBroadcast, kBarrier };
const char* op_name(int op) {
    switch (op) {
        case kAllReduce: return "all_reduce";
        case kReduceScatter: return "reduce_scatter";
        case kAllGather: return "all_gather";
        case kBroadcast: return "broadcast";
        default: return "barrier";
    }
}

class CpuCollective final : public Collective {
public:
    CpuCollective(std::shared_ptr<CpuCollectiveGroup> group, int rank) : group_(std::move(group)), rank_(rank) {}
    int rank() const override { return rank_; }
    int world_size() const override { return group_->world_size(); }

    void all_reduce_sum(float* buf, std::size_t n) override {
        count_all_reduce(n);
        if (world_size() == 1) return;
        enter({kAllReduce, n, 0, buf, buf});
        const std::size_t lo = chunk_begin(n, rank_), hi = chunk_begin(n, rank_ + 1);
        sum_into_temp(lo, hi - lo);
        group_->sync();  // every rank has read every input
        for (int q = 0; q < world_size(); ++q)
            if (hi > lo) std::memcpy(group_->slot(q).recv + lo, temp_.data(), (hi - lo) * sizeof(float));
        group_->sync();  // every rank's buffer holds the whole sum
    }

    void reduce_scatter_sum(float* recv, const float* send, std::size_t count) override {
        count_scatter_gather(count);
        if (world_size() == 1) {
            if (recv != send && count > 0) std::memmove(recv, send, count * sizeof(float));
            return;
        }
        enter({kReduceScatter, count, 0, send, recv});
        sum_into_temp(static_cast<std::size_t>(rank_) * count, count);
        group_->sync();  // recv may alias send: write only after everyone has read
        if (count > 0) std::memcpy(recv, temp_.data(), count * sizeof(float));
    }

    void all_gather(float* recv, const float* send, std::size_t count) override {
        count_scatter_gather(count);
        if (world_size() == 1) {
            if (recv != send && count > 0) std::memmove(recv, send, count * sizeof(float));
            return;
        }
        enter({kAllGather, count, 0, send, recv});
        for (int q = 0; q < world_size(); ++q) {
            float* dst = recv + static_cast<std::size_t>(q) * count;
            const float* src = group_->slot(q).send;
            if (dst != src && count > 0) std::memmove(dst, src, count * sizeof(float));
        }
        group_->sync();  // nobody changes its send buffer before everyone has copied it
    }

    void broadcast(float* buf, std::size_t n, int root) override {
        if (root < 0 || root >= world_size())
            throw Error("broadcast: root " + std::to_string(root) + " is not a rank of this island of " +
                        std::to_string(world_size()));
        count_broadcast(n, root);
        if (world_size() == 1) return;
        enter({kBroadcast, n, root, buf, buf});
        if (rank_ != root && n > 0) std::memcpy(buf, group_->slot(root).send, n * sizeof(float));
        group_->sync();
    }

    void barrier() override {
        if (world_size() == 1) return;
        group_->publish(rank_, {kBarrier, 0, 0, nullptr, nullptr});
        group_->sync();
    }

    void abort() override { group_->abort("rank " + std::to_string(rank_) + " aborted the island's collectives"); }

private:
    std::size_t chunk_begin(std::size_t n, int r) const { return n * static_cast<std::size_t>(r) / world_size(); }

    // Publishes this rank's op, waits for everyone, and checks that all ranks called the same op.
    void enter(const CpuCollectiveGroup::Slot& s) {
        group_->publish(rank_, s);
        group_->sync();
        for (int q = 0; q < world_size(); ++q) {
            const auto& o = group_->slot(q);
            if (o.op != s.op || o.n != s.n || o.root != s.root) {
                const std::string why = std::string("collective mismatch: rank ") + std::to_string(rank_) + " called " +
                                        op_name(s.op) + "(" + std::to_string(s.n) + ") while rank " +
                                        std::to_string(q) + " called " + op_name(o.op) + "(" + std::to_string(o.n) + ")";
                group_->abort(why);
                throw Error(why);
            }
        }
    }

    // temp_[i] = sum over q in order 0..N-1 of slot(q).send[begin + i], i < count.
    void sum_into_temp(std::size_t begin, std::size_t count) {
        temp_.resize(count);
        const float* first = group_->slot(0).send + begin;
        for (std::size_t i = 0; i < count; ++i) temp_[i] = first[i];
        for (int q = 1; q < world_size(); ++q) {
            const float* src = group_->slot(q).send + begin;
            for (std::size_t i = 0; i < count; ++i) temp_[i] += src[i];
        }
    }

    std::shared_ptr<CpuCollectiveGroup> group_;
    int rank_;
    std::vector<float> temp_;
};

}  // namespace

CpuCollectiveGroup::CpuCollectiveGroup(int world_size) : world_size_(world_size), slots_(world_size) {}

std::shared_ptr<CpuCollectiveGroup> CpuCollectiveGroup::create(int world_size) {
    if (world_size < 1) throw Error("a CPU collective group needs at least 1 rank, got " + std::to_string(world_size));
    return std::shared_ptr<CpuCollectiveGroup>(new CpuCollectiveGroup(world_size));
}

std::unique_ptr<Collective> CpuCollectiveGroup::rank(int r) {
    if (r < 0 || r >= world_size_)
        throw Error("rank " + std::to_string(r) + " is outside this group of " + std::to_string(world_size_));
    return std::make_unique<CpuCollective>(shared_from_this(), r);
}

void CpuCollectiveGroup::sync() {
    std::unique_lock<std::mutex> lock(mu_);
    if (aborted_) throw Error(abort_reason_);
    const std::uint64_t generation = generation_;
    if (++arrived_ == world_size_) {
        arrived_ = 0;
        ++generation_;
        cv_.notify_all();
        return;
    }
    cv_.wait(lock, [&] { return generation_ != generation || aborted_; });
    if (generation_ == generation) throw Error(abort_reason_);
}

void CpuCollectiveGroup::abort(const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!aborted_) abort_reason_ = why;
    aborted_ = true;
    cv_.notify_all();
}

std::vector<std::unique_ptr<Collective>> make_cpu_collectives(int n) {
    auto group = CpuCollectiveGroup::create(n);
    std::vector<std::unique_ptr<Collective>> out;
    for (int r = 0; r < n; ++r) out.push_back(group->rank(r));
    return out;
}

}  // namespace arch
