// peers/round_ledger.cpp: RoundLedger.
#include "peers/round_ledger.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace arch {

void RoundLedger::open(uint64_t uplink_bytes) {
    raw_bytes_ = 0;
    opened_ = row_started_ = clock_.now();
    up_mark_ = uplink_bytes;
}

void RoundLedger::decoded(double seconds, double since_begin_seconds) {
    decode_s_ += seconds;
    last_arrival_ = clock_.now();
    const Clock::time_point begun = last_arrival_ - std::chrono::duration_cast<Clock::duration>(
                                                        std::chrono::duration<double>(std::max(0.0, seconds + since_begin_seconds)));
    if (!last_begun_ || begun > *last_begun_) last_begun_ = begun;
}

std::string RoundLedger::update_sent(uint64_t ended, const UpdateSeconds& s) {
    char line[256];
    std::snprintf(line, sizeof(line),
                  "round %llu host seconds: receive %.2f, decode %.2f, aggregate+encode %.2f, outer step %.2f, "
                  "checkpoint %.2f, eval %.2f",
                  static_cast<unsigned long long>(ended),
                  std::max(0.0, std::chrono::duration<double>(last_arrival_ - row_started_).count()), decode_s_,
                  s.aggregate, s.step, s.checkpoint, s.eval);
    decode_s_ = 0;
    update_sent_ = clock_.now();
    update_round_ = ended;
    return line;
}

std::optional<std::string> RoundLedger::update_held() {
    if (update_round_ == UINT64_MAX) return std::nullopt;
    char line[160];
    std::snprintf(line, sizeof(line), "round %llu update held by every island %.2f s after it was sent",
                  static_cast<unsigned long long>(update_round_), clock_.seconds_since(update_sent_));
    update_round_ = UINT64_MAX;
    if (last_begun_) last_sync_s_ = clock_.seconds_since(*last_begun_);
    last_begun_.reset();
    return line;
}

RoundRow RoundLedger::close(uint64_t ended, std::size_t islands, double loss, float val, uint64_t uplink_bytes) {
    RoundRow row;
    row.round = ended;
    row.islands = static_cast<int>(islands);
    row.mean_inner_loss = static_cast<float>(loss);
    row.val_loss = val;
    row.bytes_up = uplink_bytes - up_mark_;
    row.bytes_down = down_bytes_;  // update (and state) payloads queued for the islands this round
    row.compression_ratio = row.bytes_up > 0 ? raw_bytes_ / static_cast<double>(row.bytes_up) : 0;
    row.seconds = clock_.seconds_since(row_started_);
    down_bytes_ = 0;
    up_mark_ = uplink_bytes;
    raw_bytes_ = 0;
    row_started_ = clock_.now();
    return row;
}

void RoundLedger::theta(uint64_t round, std::string hash) {
    thetas_.emplace_back(round, std::move(hash));
    while (thetas_.size() > catch_up_ + 1) thetas_.pop_front();
}

std::optional<std::string> RoundLedger::theta_at(uint64_t round) const {
    for (const auto& [r, hash] : thetas_)
        if (r == round) return hash;
    return std::nullopt;
}

}  // namespace arch
