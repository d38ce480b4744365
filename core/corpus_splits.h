// core/corpus_splits.h: a corpus's token stream, in order, into train and val shards on disk.
// Which tokens go to val is ValSplit's rule (corpus.h): whole documents by a seeded hash, every k-th
// chunk of the stream, or the stream's tail (moved out of the train shards at the end). Shards hold
// at most shard_tokens tokens each (llm.c's 100M by default); every time one is finished, the writer's state can be saved
// and the work resumed from it later (the open shards' .tmp files are cut back to that state).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/corpus.h"

namespace arch {

class TokenShardWriter;

// One split's shards, DIR/<split>_NNNNNN.bin.
struct ShardSequenceState {
    uint64_t finished = 0;     // shards written whole
    uint64_t open_tokens = 0;  // tokens in the next one's .tmp file
    uint64_t tokens = 0;       // all tokens of the split so far
};

class ShardSequence {
public:
    ShardSequence(std::string dir, std::string split, int token_bytes, uint64_t shard_tokens, ShardSequenceState resume = {});
    ~ShardSequence();
    // Appends tokens; true when a shard was finished on the way.
    bool append(std::span<const uint32_t> tokens);
    void flush();   // the open shard's tokens are in its .tmp file
    void finish();  // the open shard, if it holds tokens, is written whole
    void cut_back(const ShardSequenceState& state);  // after shards were shortened on disk (none open)
    const ShardSequenceState& state() const { return state_; }
    std::string shard_path(uint64_t index) const;

private:
    std::string dir_, split_;
    int token_bytes_;
    uint64_t shard_tokens_;
    ShardSequenceState state_;
    std::unique_ptr<TokenShardWriter> open_;
};

// Where to resume: the stream position (tokens routed so far) and both splits' states.
struct SplitterState {
    uint64_t stream_tokens = 0;
    ShardSequenceState train, val;
};

class CorpusSplitter {
public:
    CorpusSplitter(const std::string& dir, int token_bytes, const ValSplit& val, uint64_t shard_tokens,
                   const SplitterState& resume = {});
    // The next tokens of the stream, all of one document; true when a shard was finished on the way.
    bool add(uint64_t document, std::span<const uint32_t> tokens);
    SplitterState state();  // flushes, so the state is on disk
    // Writes the last shards (moving the tail into val for a tail split, or for a split by documents
    // that put no document in val) and checks train holds tokens; throws arch::Error saying why not.
    void finish(uint64_t documents);
    uint64_t train_tokens() const { return train_.state().tokens; }
    uint64_t val_tokens() const { return val_.state().tokens; }
    uint64_t train_shards() const { return train_.state().finished; }
    uint64_t val_shards() const { return val_.state().finished; }

private:
    void move_tail_to_val();
    ValSplit split_;
    int token_bytes_;
    uint64_t shard_tokens_;
    uint64_t stream_tokens_;
    ShardSequence train_, val_;
};

// Whether a split by documents puts document d in val: a hash of (seed, d) below fraction.
bool document_in_val(uint64_t document, uint64_t seed, double fraction);

}  // namespace arch
