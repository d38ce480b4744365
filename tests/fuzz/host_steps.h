// tests/fuzz/host_steps.h: the byte encoding of fuzz_host's inputs and its reader, shared with
// make_fuzz_seeds so the committed seeds keep meaning what they say. Layout: two variant bytes (the run
// config), then steps; each step is one op byte (selector << 2 | peer), then that action's own bytes
// (read_step); what the choice bytes choose is fuzz_host.cpp's. Past the end of the input, reads give 0.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

namespace fuzz_host {

constexpr int kPeers = 4;  // the op byte's low two bits pick one of four authenticated keys

enum class Action : uint8_t {
    honest,        // what an honest island would do next: hello, hash report, or its pseudo-gradient
    hello,         // a hello with fuzzed fields
    hash_report,   // a hash report, matching the host's θ or not
    pseudo_grad,   // a pseudo-gradient with fuzzed round, scale, token weight, codec and size (b's top bit: moments)
    connected,     // a connection event
    disconnected,  // a disconnection event
    bye,           // a bye with a fuzzed reason
    deliver,       // the peer reads everything queued for it (no event)
    raw,           // a message of a fuzzed type, round and payload
    burst,         // a count byte, then the next step, performed 16 x (1 + count) times (floods, up to 4096)
    control,       // pause, resume or leave through the control API's RunStatus (no event)
};

// Selector (the op byte's high six bits) -> action: honest steps are the likeliest, so that random
// inputs finish rounds.
inline Action action_of(uint8_t selector) {
    struct Range {
        uint8_t last;
        Action action;
    };
    static constexpr Range kRanges[] = {
        {23, Action::honest},      {31, Action::hello},        {37, Action::hash_report}, {45, Action::pseudo_grad},
        {48, Action::connected},   {51, Action::disconnected}, {53, Action::bye},         {57, Action::deliver},
        {61, Action::raw},         {62, Action::burst},        {63, Action::control},
    };
    for (const Range& r : kRanges)
        if (selector <= r.last) return r.action;
    return Action::control;
}

// The op byte that make_fuzz_seeds writes for an action: the first selector of its range.
inline uint8_t op(Action a, int peer) {
    static constexpr uint8_t kFirst[] = {0, 24, 32, 38, 46, 49, 52, 54, 58, 62, 63};
    return static_cast<uint8_t>(kFirst[static_cast<int>(a)] << 2 | (peer & 3));
}

// Reads the input front to back; past the end every read gives zeros.
class Bytes {
public:
    Bytes(const uint8_t* data, std::size_t size) : data_(data), size_(size) {}
    bool empty() const { return pos_ >= size_; }
    uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
    std::string str(std::size_t max_len) {  // a length byte, then that many bytes
        const std::size_t n = std::min<std::size_t>(u8() % (max_len + 1), size_ - std::min(pos_, size_));
        std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
        pos_ += n;
        return s;
    }

private:
    const uint8_t* data_;
    std::size_t size_;
    std::size_t pos_ = 0;
};

// One step as read from the input; performing it again (a burst) reads nothing more.
struct Step {
    Action action = Action::honest;
    int peer = 0;
    uint8_t a = 0, b = 0, c = 0;  // the action's choice bytes
    uint8_t mangle = 0, at = 0;   // well-formed messages: truncate or flip a byte of the payload
    std::string text;             // hello name, bye reason, raw payload
};

inline Step read_step(Bytes& in) {
    Step s;
    const uint8_t op = in.u8();
    s.peer = op & 3;
    s.action = action_of(op >> 2);
    switch (s.action) {
        case Action::hello:
            s.a = in.u8();
            s.b = in.u8();
            s.text = in.str(160);  // names above 128 bytes are refused
            break;
        case Action::hash_report:
            s.a = in.u8();
            break;
        case Action::pseudo_grad:
            s.a = in.u8();
            s.b = in.u8();
            s.c = in.u8();
            break;
        case Action::bye:
            s.text = in.str(64);
            break;
        case Action::raw:
            s.a = in.u8();
            s.b = in.u8();
            s.text = in.str(255);
            break;
        case Action::burst:
        case Action::control:
            s.a = in.u8();
            break;
        default:
            break;
    }
    if (s.action == Action::hello || s.action == Action::hash_report || s.action == Action::pseudo_grad) {
        s.mangle = in.u8();
        if (s.mangle >= 0xE0) s.at = in.u8();
    }
    return s;
}

// Variant bytes: byte 0 picks the run's mode and deadlines (these bits), byte 1 its aggregator
// (% 4: mean, median, trimmed:trim=1, clip:tau=1.5), Δ screen (/ 4 % 3: clip, reject, off) and
// DES-LOC (/ 12 % 2: off, or moments every round; sync only).
namespace variant {
constexpr uint8_t async = 1 << 0;            // else sync
constexpr uint8_t fold = 1 << 1;             // straggler = fold (sync), else drop
constexpr uint8_t join_past = 1 << 2;        // join_timeout_s already past when run() starts, else never
constexpr uint8_t round_past = 1 << 3;       // round_timeout_s past at the first arrival, else never
constexpr uint8_t heartbeat_past = 1 << 4;   // heartbeat_timeout_s past, else never
constexpr uint8_t with_status = 1 << 5;      // the host gets a RunStatus (control API hooks)
}  // namespace variant

}  // namespace fuzz_host
