// core/corpus_splits.cpp: ShardSequence and CorpusSplitter (corpus_splits.h). Nothing here holds more
// than one block of tokens: shards are written as tokens arrive, and a tail split reads the tail back.
#include "core/corpus_splits.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "core/token_shard.h"

namespace arch {

namespace fs = std::filesystem;

ShardSequence::ShardSequence(std::string dir, std::string split, int token_bytes, uint64_t shard_tokens,
                             ShardSequenceState resume)
    : dir_(std::move(dir)), split_(std::move(split)), token_bytes_(token_bytes), shard_tokens_(shard_tokens), state_(resume) {
    if (shard_tokens_ == 0 || shard_tokens_ > static_cast<uint64_t>(INT32_MAX))
        throw Error("corpus: shards of " + std::to_string(shard_tokens_) + " tokens (1.." + std::to_string(INT32_MAX) + ")");
    if (state_.open_tokens > 0)
        open_ = std::make_unique<TokenShardWriter>(shard_path(state_.finished), TokenShardWriter::Reopen{state_.open_tokens}, token_bytes_);
}

ShardSequence::~ShardSequence() = default;

std::string ShardSequence::shard_path(uint64_t index) const {
    char name[48];
    std::snprintf(name, sizeof(name), "%s_%06llu.bin", split_.c_str(), static_cast<unsigned long long>(index));
    return (fs::path(dir_) / name).string();
}

bool ShardSequence::append(std::span<const uint32_t> tokens) {
    bool finished = false;
    while (!tokens.empty()) {
        if (!open_) open_ = std::make_unique<TokenShardWriter>(shard_path(state_.finished), std::nullopt, token_bytes_);
        const size_t n = static_cast<size_t>(std::min<uint64_t>(tokens.size(), shard_tokens_ - state_.open_tokens));
        open_->append(tokens.first(n));
        tokens = tokens.subspan(n);
        state_.open_tokens += n;
        state_.tokens += n;
        if (state_.open_tokens == shard_tokens_) {
            finish();
            finished = true;
        }
    }
    return finished;
}

void ShardSequence::flush() {
    if (open_) open_->flush();
}

void ShardSequence::cut_back(const ShardSequenceState& state) {
    if (open_) throw Error("corpus: a shard sequence is cut back while a shard is open");
    state_ = state;
}

void ShardSequence::finish() {
    if (!open_) return;
    open_->finish();
    open_.reset();
    ++state_.finished;
    state_.open_tokens = 0;
}

bool document_in_val(uint64_t document, uint64_t seed, double fraction) {
    uint64_t z = seed * 0x9E3779B97F4A7C15ULL + document + 1;  // splitmix64 of (seed, document)
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53 < fraction;
}

namespace {

// k of a spread split: chunks k-1, 2k-1, ... go to val.
uint64_t spread_stride(double fraction) { return static_cast<uint64_t>(std::round(1.0 / fraction)); }

}  // namespace

CorpusSplitter::CorpusSplitter(const std::string& dir, int token_bytes, const ValSplit& val, uint64_t shard_tokens,
                               const SplitterState& resume)
    : split_(val),
      token_bytes_(token_bytes),
      shard_tokens_(shard_tokens),
      stream_tokens_(resume.stream_tokens),
      train_(dir, "train", token_bytes, shard_tokens, resume.train),
      val_(dir, "val", token_bytes, shard_tokens, resume.val) {}

bool CorpusSplitter::add(uint64_t document, std::span<const uint32_t> tokens) {
    const uint64_t count = tokens.size();
    bool finished = false;
    if (split_.by_document) {
        finished = (document_in_val(document, split_.seed, split_.fraction) ? val_ : train_).append(tokens);
    } else if (split_.chunk_tokens == 0) {
        finished = train_.append(tokens);  // the tail moves to val at the end
    } else {
        const uint64_t chunk = split_.chunk_tokens, k = spread_stride(split_.fraction);
        for (uint64_t at = stream_tokens_; !tokens.empty();) {
            const size_t n = static_cast<size_t>(std::min<uint64_t>(tokens.size(), chunk - at % chunk));
            finished |= ((at / chunk) % k == k - 1 ? val_ : train_).append(tokens.first(n));
            tokens = tokens.subspan(n);
            at += n;
        }
    }
    stream_tokens_ += count;
    return finished;
}

SplitterState CorpusSplitter::state() {
    train_.flush();
    val_.flush();
    return {stream_tokens_, train_.state(), val_.state()};
}

void CorpusSplitter::finish(uint64_t documents) {
    train_.finish();
    const uint64_t n = stream_tokens_;
    if (n < 2)
        throw Error("corpus: the inputs hold only " + std::to_string(n) +
                    " tokens; expected enough text for a train and a val split");
    const bool tail = !split_.by_document && split_.chunk_tokens == 0;
    // Too few documents for a split by documents (one long .txt, say): val is the stream's tail.
    const bool tail_instead = split_.by_document && val_.state().tokens == 0;
    if (tail_instead)
        log::get("data")->warn("prepare: no document of {} fell into val (val_fraction {}): val is the last tokens "
                               "of the stream instead, as --val-split tail does",
                               documents, split_.fraction);
    if (tail || tail_instead) move_tail_to_val();
    if (!split_.by_document && split_.chunk_tokens > 0) {
        const uint64_t chunk = split_.chunk_tokens, chunks = (n + chunk - 1) / chunk, k = spread_stride(split_.fraction);
        if (k > chunks)
            throw Error("corpus: a spread val split with val_fraction " + std::to_string(split_.fraction) +
                        " takes one chunk in " + std::to_string(k) + ", but the inputs hold only " + std::to_string(chunks) +
                        " chunks of " + std::to_string(chunk) + " tokens (" + std::to_string(n) +
                        " tokens): use smaller chunks or a larger val_fraction");
    }
    val_.finish();
    if (train_.state().tokens == 0)
        throw Error("corpus: a split by whole documents with val_fraction " + std::to_string(split_.fraction) +
                    " put every document (" + std::to_string(documents) + ") in val: give more documents or a smaller "
                    "--val-fraction");
}

// The last val_n tokens of the train shards become the val shards, in order; the train shards are cut
// back to the rest (a shard that is all tail is removed, the one the cut falls in is rewritten shorter).
void CorpusSplitter::move_tail_to_val() {
    const uint64_t n = train_.state().tokens;
    const auto wanted = static_cast<uint64_t>(std::ceil(split_.fraction * static_cast<double>(n)));
    const uint64_t val_n = std::min(std::max(wanted, kMinValTokens), n / 2);
    const uint64_t cut = n - val_n;
    constexpr uint64_t kBlock = 1 << 20;
    std::vector<uint32_t> ids;
    for (uint64_t at = cut; at < n;) {
        const uint64_t shard = at / shard_tokens_, offset = at % shard_tokens_;
        const uint64_t count = std::min({kBlock, n - at, shard_tokens_ - offset});
        const std::vector<std::byte> bytes = read_token_bytes(train_.shard_path(shard), offset, count);
        ids.resize(count);
        widen_tokens(bytes, token_bytes_, ids.data());
        val_.append(ids);
        at += count;
    }
    const uint64_t keep_shards = (cut + shard_tokens_ - 1) / shard_tokens_;
    if (cut % shard_tokens_ != 0) {
        const std::string path = train_.shard_path(cut / shard_tokens_);
        TokenShardWriter shorter(path, cut % shard_tokens_, token_bytes_);
        for (uint64_t at = 0; at < cut % shard_tokens_; at += kBlock)
            shorter.append_bytes(read_token_bytes(path, at, std::min(kBlock, cut % shard_tokens_ - at)));
        shorter.finish();
    }
    for (uint64_t s = keep_shards; s < train_.state().finished; ++s) fs::remove(train_.shard_path(s));
    train_.cut_back(ShardSequenceState{keep_shards, 0, cut});
}

}  // namespace arch
