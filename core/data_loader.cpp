// core/data_loader.cpp: the llm.c-compatible sequential loader and the seeded shuffled loader.
// Shards are validated (header and size) once at construction and then read on demand with seeks,
// so memory stays at one batch whatever the corpus size.
#include "core/data_loader.h"

#include <glob.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/token_shard.h"

namespace arch {

namespace {

std::vector<std::string> match_files(const std::string& pattern) {
    glob_t g{};
    const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
    std::vector<std::string> paths;
    if (rc == 0)
        for (size_t i = 0; i < g.gl_pathc; i++) paths.emplace_back(g.gl_pathv[i]);
    globfree(&g);
    if (rc == GLOB_NOMATCH || (rc == 0 && paths.empty()))
        throw Error("data: no token shard matches '" + pattern + "' (expected a file or a glob such as dir/train_*.bin)");
    if (rc != 0) throw Error("data: cannot list files matching '" + pattern + "'");
    std::sort(paths.begin(), paths.end());
    return paths;
}

}  // namespace

DataLoader::DataLoader(const std::string& pattern, int B, int T, DataOrder order, uint64_t seed, int vocab_size)
    : B_(B), T_(T), order_(order) {
    if (B <= 0 || T <= 0)
        throw Error("data: batch size B and sequence length T must be positive, got B=" + std::to_string(B) +
                    " T=" + std::to_string(T));
    const uint64_t need = static_cast<uint64_t>(B) * T + 1;
    for (const std::string& path : match_files(pattern)) {
        const TokenShardInfo info = read_token_shard_info(path);
        const uint64_t n = info.tokens;
        if (n < need)
            throw Error("data: B*T larger than the shard: '" + path + "' holds " + std::to_string(n) +
                        " tokens, a batch needs B*T+1 = " + std::to_string(need) + " (B=" + std::to_string(B) +
                        ", T=" + std::to_string(T) + "); use a smaller B or T, or more data");
        shards_.push_back({path, n, total_windows_, info.token_bytes});
        total_tokens_ += n;
        total_windows_ += n - static_cast<uint64_t>(T);  // starts 0 .. n-T-1
    }
    if (vocab_size > 0) check_vocab(vocab_size);
    buffer_.resize(need);
    cursor_.rng_state = Rng(seed).state();
}

void DataLoader::check_vocab(int vocab_size) {
    std::vector<uint32_t> block;
    for (uint64_t s = 0; s < shards_.size(); s++) {
        for (uint64_t off = 0; off < shards_[s].tokens; off += block.size()) {
            block.resize(std::min<uint64_t>(1 << 20, shards_[s].tokens - off));
            read_tokens(s, off, block.size(), block.data());
            const auto it = std::find_if(block.begin(), block.end(), [&](uint32_t t) { return t >= static_cast<uint32_t>(vocab_size); });
            if (it != block.end())
                throw Error("data: token shard '" + shards_[s].path + "' holds token id " + std::to_string(*it) +
                            " at position " + std::to_string(off + (it - block.begin())) +
                            ", but the vocabulary has only " + std::to_string(vocab_size) +
                            " ids; the shard was made with another tokenizer");
        }
    }
}

void DataLoader::read_tokens(uint64_t shard, uint64_t offset, size_t count, uint32_t* out) {
    if (open_shard_ != shard) {
        file_.close();
        file_.clear();
        file_.open(shards_[shard].path, std::ios::binary);
        if (!file_) throw Error("data: token shard '" + shards_[shard].path + "' cannot be opened: " + std::strerror(errno));
        open_shard_ = shard;
    }
    const auto width = static_cast<uint64_t>(shards_[shard].token_bytes);
    bytes_.resize(width * count);
    file_.seekg(static_cast<std::streamoff>(kTokenShardHeaderBytes + width * offset));
    file_.read(reinterpret_cast<char*>(bytes_.data()), static_cast<std::streamsize>(bytes_.size()));
    if (!file_) {
        open_shard_ = UINT64_MAX;
        throw Error("data: reading " + std::to_string(count) + " tokens at " + std::to_string(offset) +
                    " from '" + shards_[shard].path + "' failed (was the file changed while training?)");
    }
    widen_tokens(bytes_, shards_[shard].token_bytes, out);
}

void DataLoader::next_batch(int* inputs, int* targets) {
    const size_t BT = static_cast<size_t>(B_) * T_;
    if (order_ == DataOrder::sequential) {
        if (cursor_.position + BT + 1 > shards_[cursor_.shard].tokens) {
            cursor_.shard = (cursor_.shard + 1) % shards_.size();
            cursor_.position = 0;
        }
        read_tokens(cursor_.shard, cursor_.position, BT + 1, buffer_.data());
        for (size_t i = 0; i < BT; i++) {
            inputs[i] = static_cast<int>(buffer_[i]);
            targets[i] = static_cast<int>(buffer_[i + 1]);
        }
        cursor_.position += BT;
        return;
    }
    Rng rng;
    rng.set_state(cursor_.rng_state);
    for (int b = 0; b < B_; b++) {
        const uint64_t window = rng.below(total_windows_);
        // The shard whose window range holds `window`: the last one with first_window <= window.
        const auto it = std::upper_bound(shards_.begin(), shards_.end(), window,
                                         [](uint64_t w, const Shard& s) { return w < s.first_window; });
        const uint64_t s = static_cast<uint64_t>(it - shards_.begin()) - 1;
        read_tokens(s, window - shards_[s].first_window, static_cast<size_t>(T_) + 1, buffer_.data());
        for (int t = 0; t < T_; t++) {
            inputs[static_cast<size_t>(b) * T_ + t] = static_cast<int>(buffer_[t]);
            targets[static_cast<size_t>(b) * T_ + t] = static_cast<int>(buffer_[t + 1]);
        }
    }
    cursor_.rng_state = rng.state();
}

void DataLoader::seek(const DataCursor& cursor) {
    if (cursor.shard >= shards_.size())
        throw Error("data: cannot resume at shard " + std::to_string(cursor.shard) + ": only " +
                    std::to_string(shards_.size()) + " shards match (were shards removed since the checkpoint?)");
    if (cursor.position > shards_[cursor.shard].tokens)
        throw Error("data: cannot resume at token " + std::to_string(cursor.position) + " of '" +
                    shards_[cursor.shard].path + "', which holds only " +
                    std::to_string(shards_[cursor.shard].tokens) + " tokens");
    if (cursor.rng_state == std::array<uint64_t, 4>{})
        throw Error("data: cannot resume with an all-zero random state (the cursor was never initialised)");
    cursor_ = cursor;
}

}  // namespace arch
