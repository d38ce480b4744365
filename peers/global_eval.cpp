// peers/global_eval.cpp: GlobalEval: one thread, one θ, one result slot.
#include "peers/global_eval.h"

#include <exception>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/data_loader.h"
#include "core/error.h"
#include "kernels/cpu/cpu_backend.h"

namespace arch {

GlobalEval::GlobalEval(const RunConfig& config, const ModelConfig& model, std::string val_pattern)
    : config_(config), val_pattern_(std::move(val_pattern)) {
    backend_ = make_cpu_backend();
    params_ = std::make_unique<ViewParamStore>(ParamLayout(model));
    model_ = make_transformer(model, *backend_, params_.get());
    thread_ = std::thread([this] { loop(); });
}

GlobalEval::~GlobalEval() {
    {
        std::lock_guard lock(mu_);
        quit_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

bool GlobalEval::busy() const {
    std::lock_guard lock(mu_);
    return busy_;
}

bool GlobalEval::start(uint64_t round, std::shared_ptr<const FloatStore> theta) {
    if (!enabled()) return false;
    {
        std::lock_guard lock(mu_);
        if (busy_) return false;
        theta_ = std::move(theta);
        round_ = round;
        busy_ = requested_ = true;
    }
    cv_.notify_all();
    return true;
}

void GlobalEval::wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !busy_; });
}

std::optional<GlobalEval::Result> GlobalEval::take_result() {
    std::lock_guard lock(mu_);
    return std::exchange(result_, std::nullopt);
}

GlobalEval::Result GlobalEval::evaluate() {
    const Clock::time_point t0 = Clock::real().now();
    Result r{round_, -1, 0, ""};
    try {
        params_->view(theta_->values());
        DataLoader val(val_pattern_, config_.batch, config_.seq_len, DataOrder::sequential, 0);
        const std::size_t tokens = static_cast<std::size_t>(config_.batch) * config_.seq_len;
        std::vector<int> inputs(tokens), targets(tokens);
        double sum = 0;
        int batches = 0;
        for (; batches < config_.val_batches; ++batches) {
            {
                std::lock_guard lock(mu_);
                if (quit_) throw Error("the host is stopping");
            }
            val.next_batch(inputs.data(), targets.data());
            sum += model_->forward(inputs.data(), targets.data(), config_.batch, config_.seq_len);
        }
        r.loss = static_cast<float>(sum / batches);
    } catch (const std::exception& e) {  // a validation shard gone bad: reported, never the host's end
        r.error = e.what();
    }
    theta_.reset();  // a copy of θ made meanwhile (copy on write) is freed here
    r.seconds = Clock::real().seconds_since(t0);
    return r;
}

void GlobalEval::loop() {
    std::unique_lock lock(mu_);
    for (;;) {
        cv_.wait(lock, [&] { return requested_ || quit_; });
        if (!requested_) return;
        requested_ = false;
        lock.unlock();
        Result r = evaluate();
        lock.lock();
        result_ = std::move(r);
        busy_ = false;
        cv_.notify_all();
    }
}

}  // namespace arch
