// peers/round_ledger.h: the host's account of its rounds. What each moved (bytes up and down, and the
// fp32 size of what came up, for the compression ratio) and how long it took, as a RoundRow; where the
// host's own time went (the "host seconds" line, which bench_rounds reads) and when an update had
// reached every island; and the θ hash at the start of the last few rounds, by which a peer catching
// up through the updates queued for it is told from one that went astray.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>

#include "core/clock.h"

namespace arch {

struct RoundRow {
    uint64_t round = 0;
    int islands = 0;
    float mean_inner_loss = 0;
    float val_loss = -1;
    uint64_t bytes_up = 0, bytes_down = 0;
    double compression_ratio = 0;  // fp32 size of the pseudo-gradients received / bytes received for them
    double seconds = 0;
    double epsilon = -1;  // differential privacy: ε spent after this round (-1: the run has none)
    uint32_t steps = 0;     // the round's H (async: of the island started last, before Dynamic Local Updates)
    std::string steps_why;  // "inner.steps_per_round", or what H from the link was chosen from
};

// The host's own work in an update, in real seconds.
struct UpdateSeconds {
    double aggregate = 0, step = 0, checkpoint = 0, eval = 0;
};

class RoundLedger {
public:
    // `clock`: the run's (rows, arrivals); `catch_up`: how many updates a peer may have queued.
    RoundLedger(const Clock& clock, std::size_t catch_up) : clock_(clock), catch_up_(catch_up) {}

    void open(uint64_t uplink_bytes);  // a round opens: its row counts from here
    double seconds_open() const { return clock_.seconds_since(opened_); }
    void sent_down(uint64_t bytes) { down_bytes_ += bytes; }  // an update or a state queued for an island
    void took_in(double fp32_bytes) { raw_bytes_ += fp32_bytes; }  // a Δ's or moments' size in fp32
    // A Δ arrived, began since_begin_seconds before (its begin: the island handed it over about then),
    // and took this long to take in.
    void decoded(double seconds, double since_begin_seconds);

    // The update of round `ended` is on its way: the host seconds line for the log.
    std::string update_sent(uint64_t ended, const UpdateSeconds& s);
    // Once every island holds it: the line saying how long that took, once per update.
    std::optional<std::string> update_held();
    // The last sync: from the begin of the round's last Δ to its update held by every island
    // (the Δ up, the host's work, the update down: what H from the link hides); 0 before the first.
    double last_sync_s() const { return last_sync_s_; }
    // The round's row, from the islands' uplink byte counter now; the next row counts from here.
    RoundRow close(uint64_t ended, std::size_t islands, double loss, float val, uint64_t uplink_bytes);

    void theta(uint64_t round, std::string hash);  // θ's hash at the start of `round`
    std::optional<std::string> theta_at(uint64_t round) const;  // none: further back than kept

private:
    const Clock& clock_;
    std::size_t catch_up_;
    Clock::time_point opened_{};       // the round's opening (a policy's deadline runs from it)
    Clock::time_point row_started_{};  // the last update or opening: the row's seconds
    uint64_t up_mark_ = 0, down_bytes_ = 0;
    double raw_bytes_ = 0;
    Clock::time_point last_arrival_{};
    std::optional<Clock::time_point> last_begun_;  // the begin of this round's last Δ
    double decode_s_ = 0, last_sync_s_ = 0;
    Clock::time_point update_sent_{};
    uint64_t update_round_ = UINT64_MAX;  // an update not yet held by every island; none: UINT64_MAX
    std::deque<std::pair<uint64_t, std::string>> thetas_;  // (round, θ hash at its start), the last few
};

}  // namespace arch
