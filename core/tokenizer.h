// core/tokenizer.h: byte-level BPE tokenizer: train on text, encode, decode, save and load.
// Ids 0..255 are the raw bytes, then one id per merge in training order, then <|endoftext|> (eot) as
// the last id. Text is pre-split GPT-2 style so merges never cross word/number/punctuation pieces.
// load() also reads llm.c's gpt2_tokenizer.bin, for decoding only, and Hugging Face tokenizer.json
// files (byte-level BPE, core/hf_tokenizer.h), which then encode and decode exactly as `tokenizers`
// does. File format: docs/tokenizer.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace arch {

// Called during training with (merges done, merges wanted), about every tenth of the way and at the end.
using MergeProgress = std::function<void(int done, int total)>;

class Tokenizer {
public:
    // Learns vocab_size - 257 merges from text (257 <= vocab_size <= 65536, so ids fit uint16 shards).
    static Tokenizer train(std::string_view text, int vocab_size, const MergeProgress& progress = {});
    static Tokenizer load(const std::string& path);  // ours, llm.c's gpt2_tokenizer.bin, or a tokenizer.json
    void save(const std::string& path) const;         // ours only; throws for the other two

    // Never emits eot: the text "<|endoftext|>" is encoded as plain bytes. Throws if !can_encode().
    std::vector<int> encode(std::string_view text) const;
    std::string decode(std::span<const int> tokens) const;  // throws on an id outside the vocab
    std::string decode_token(int id) const;
    bool is_hugging_face() const { return hf_ != nullptr; }

    int vocab_size() const { return static_cast<int>(token_bytes_.size()); }
    int eot_token() const { return eot_; }
    // The id put before every document of a corpus: a Hugging Face tokenizer's BOS where its template
    // adds one (Llama 3's <|begin_of_text|>, as llm.c prepares Llama 3 data), else the end-of-text
    // token (GPT-2 and ours: llm.c's <|endoftext|> convention). -1 if it has neither.
    int document_separator() const;
    bool can_encode() const { return can_encode_; }
    const std::vector<std::pair<int, int>>& merges() const { return merges_; }

private:
    friend class TokenizerTrainer;
    Tokenizer() = default;
    static Tokenizer from_merges(std::vector<std::pair<int, int>> merges, const std::string& source);
    static Tokenizer load_llmc(const std::string& path, const std::string& bytes);
    void encode_piece(std::string_view piece, std::vector<int>& out) const;

    std::vector<std::string> token_bytes_;        // id -> the bytes it decodes to
    std::vector<std::pair<int, int>> merges_;     // merge i makes id 256 + i
    std::unordered_map<uint64_t, int> merge_rank_;  // (left << 32 | right) -> merge index
    int eot_ = -1;
    bool can_encode_ = false;
    std::shared_ptr<const class HfTokenizer> hf_;  // a tokenizer.json: encodes; token_bytes_ decode
};

// Counts pre-tokens (the pieces merges stay inside) over any number of texts, then trains.
// Lets a caller stream a corpus through in chunks instead of holding it whole.
class TokenizerTrainer {
public:
    void add_text(std::string_view text);
    Tokenizer train(int vocab_size, const MergeProgress& progress = {}) const;

private:
    std::unordered_map<std::string, uint64_t> piece_counts_;
};

// Length of the longest prefix of text that ends where the pre-splitter cuts whatever follows
// (after a newline that is followed by a non-space). Encoding text in chunks cut there gives
// exactly the tokens of encoding it whole. 0 if there is no such place.
size_t pretoken_safe_prefix(std::string_view text);

}  // namespace arch
