// peers/diloco/round_island.cpp: run.mode -> the island's side of its rounds, and the island of sync
// and async rounds (every round from θ, as IslandWorker::run_round does it).
#include "peers/diloco/round_island.h"

#include "peers/diloco/overlap_island.h"
#include "peers/diloco/streaming_island.h"
#include "peers/run_config.h"

namespace arch::diloco {

namespace {
class FromTheta final : public RoundIsland {
public:
    explicit FromTheta(IslandWorker& worker) : worker_(worker) {}
    RoundResult run_round(const GlobalModel& replica, const RoundPlan& plan, int, bool,
                          const std::function<void(const StepStats&)>& on_step) override {
        return worker_.run_round(replica.theta(), plan, on_step);
    }

private:
    IslandWorker& worker_;
};
}  // namespace

std::unique_ptr<RoundIsland> make_round_island(const RunConfig& c, IslandWorker& worker) {
    switch (c.mode) {
        case RunMode::streaming: return std::make_unique<StreamingIsland>(worker, c.tau, c.alpha, c.merge);
        case RunMode::overlap: return std::make_unique<OverlapIsland>(worker, c.overlap_proxy_scale);
        case RunMode::sync:
        case RunMode::async: break;
    }
    return std::make_unique<FromTheta>(worker);
}

}  // namespace arch::diloco
