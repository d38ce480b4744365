// core/token_shard.h: read and write llm.c token shards, the data format of ARCHITECTURE.md.
// Layout: 256 little-endian int32 header (magic, version, token count, rest zero), then that many
// tokens and nothing else. Two widths, as llm.c writes them: magic 20240520 version 1 holds uint16
// tokens (GPT-2), magic 20240801 version 7 holds uint32 tokens (Llama 3). A shard's width is read
// from its header; a vocabulary of at most 65,536 ids is written as uint16, a larger one as uint32.
#pragma once

#include <cstdint>
#include <fstream>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace arch {

constexpr int32_t kTokenShardMagic = 20240520;  // uint16 tokens
constexpr int32_t kTokenShardVersion = 1;
constexpr int32_t kTokenShard32Magic = 20240801;  // uint32 tokens
constexpr int32_t kTokenShard32Version = 7;
constexpr size_t kTokenShardHeaderBytes = 256 * sizeof(int32_t);

// The width (2 or 4 bytes a token) of shards for a vocabulary of vocab_size ids; throws arch::Error
// for a vocabulary that does not fit uint32.
int token_bytes_for_vocab(int64_t vocab_size);

struct TokenShardInfo {
    uint64_t tokens = 0;
    int token_bytes = 2;  // 2: uint16, 4: uint32
};

// Writes path.tmp, then renames it over path: a failed write leaves any existing path untouched.
void write_token_shard(const std::string& path, std::span<const uint16_t> tokens);
void write_token_shard(const std::string& path, std::span<const uint32_t> tokens, int token_bytes);

// Writes a shard piece by piece into path.tmp, renamed over path by finish(), so a large shard is
// never held in memory whole. With a declared count, finish() checks exactly that many arrived;
// without one, the header's count is written at finish(). Destroyed unfinished, it removes path.tmp.
class TokenShardWriter {
public:
    TokenShardWriter(std::string path, std::optional<uint64_t> tokens, int token_bytes = 2);
    // Goes on with the path.tmp an earlier writer left unfinished, keeping its first kept_tokens
    // tokens (throws if it holds fewer) and dropping the rest; the count is written at finish().
    struct Reopen {
        uint64_t kept_tokens;
    };
    TokenShardWriter(std::string path, Reopen reopen, int token_bytes);
    ~TokenShardWriter();
    void append(std::span<const uint16_t> tokens);
    void append(std::span<const uint32_t> tokens);  // throws for an id that does not fit a uint16 shard
    void append_bytes(std::span<const std::byte> bytes);  // tokens already laid out at this shard's width
    uint64_t written() const { return written_; }
    void flush();  // what was appended is in path.tmp (for a later Reopen)
    void finish();  // throws unless the declared tokens (if any) were appended and everything was written

private:
    void count_more(uint64_t tokens);
    std::string path_, tmp_;
    std::optional<uint64_t> tokens_;
    int token_bytes_;
    uint64_t written_ = 0;
    std::ofstream out_;
    std::vector<uint16_t> narrow_;  // append(uint32) into a uint16 shard
    bool finished_ = false;
};

// Reads and validates only the header and the file size; throws arch::Error for a missing file,
// a wrong magic or version, or a file size that differs from the header's count (truncated or extra).
TokenShardInfo read_token_shard_info(const std::string& path);
uint64_t read_token_shard_count(const std::string& path);

// Reads a whole uint16 shard (throws for a uint32 one, naming it) after the same checks.
std::vector<uint16_t> read_token_shard(const std::string& path);

// Reads a whole shard of either width, as ids.
std::vector<uint32_t> read_token_ids(const std::string& path);

// The bytes of tokens [offset, offset + count) of a shard, at its own width, after the same checks:
// what a data manifest hashes and what the host sends a peer.
std::vector<std::byte> read_token_bytes(const std::string& path, uint64_t offset, uint64_t count);

// Ids from little-endian tokens of token_bytes bytes each: out receives bytes.size() / token_bytes ids.
void widen_tokens(std::span<const std::byte> bytes, int token_bytes, uint32_t* out);

}  // namespace arch
