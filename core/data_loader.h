// core/data_loader.h: batches of (inputs, targets) from llm.c token shards (uint16 or uint32, each
// shard read at the width its header names), sequential or shuffled.
// sequential is llm.c's rule: B*T+1 consecutive tokens from the shard's position, advance by B*T;
// a batch that would overrun the shard moves to the next shard (wrapping) at position 0.
// shuffled: each of the B rows is a window of T+1 tokens at a uniformly random start over all shards.
// The DataCursor captures everything that decides the next batch, so a resumed run reads the same.
#pragma once

#include <array>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "core/rng.h"

namespace arch {

enum class DataOrder { sequential, shuffled };

struct DataCursor {
    uint64_t shard = 0;     // index into the sorted shard list
    uint64_t position = 0;  // token offset of the next sequential batch within that shard
    std::array<uint64_t, 4> rng_state{};  // shuffled order's generator (xoshiro256**)
    bool operator==(const DataCursor&) const = default;
};

class DataLoader {
public:
    // pattern: one path or a glob (e.g. "dir/train_*.bin"), matched files sorted by name.
    // vocab_size > 0 checks every token id is below it (reads all shards once); 0 skips the check.
    DataLoader(const std::string& pattern, int B, int T, DataOrder order, uint64_t seed, int vocab_size = 0);

    // inputs and targets each receive B*T ids (row-major B rows of T); targets = inputs shifted by one.
    void next_batch(int* inputs, int* targets);

    DataCursor cursor() const { return cursor_; }
    void seek(const DataCursor& cursor);  // throws arch::Error if it does not fit these shards

    uint64_t total_tokens() const { return total_tokens_; }
    size_t num_shards() const { return shards_.size(); }
    const std::string& shard_path(size_t i) const { return shards_[i].path; }

private:
    struct Shard {
        std::string path;
        uint64_t tokens;
        uint64_t first_window;  // shuffled: index of this shard's first window over all shards
        int token_bytes;        // 2 or 4
    };
    void read_tokens(uint64_t shard, uint64_t offset, size_t count, uint32_t* out);
    void check_vocab(int vocab_size);

    std::vector<Shard> shards_;
    int B_, T_;
    DataOrder order_;
    uint64_t total_tokens_ = 0;
    uint64_t total_windows_ = 0;
    DataCursor cursor_;
    std::vector<uint32_t> buffer_;
    std::vector<std::byte> bytes_;  // the shard's bytes before widening
    std::ifstream file_;  // the shard last read from
    uint64_t open_shard_ = UINT64_MAX;
};

}  // namespace arch
