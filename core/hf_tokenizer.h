// core/hf_tokenizer.h: Hugging Face tokenizer.json files of byte-level BPE models (GPT-2, Llama 3,
// SmolLM, Qwen), encoded exactly as the `tokenizers` library encodes them:
//   1. added tokens are cut out of the raw text first (leftmost, longest), each its own id;
//   2. the rest goes through the pre-tokenizer: ByteLevel (GPT-2's split regex when use_regex) and
//      Split (a regex, behaviour Isolated or Removed), alone or in a Sequence. The regexes run on
//      PCRE2 with Unicode properties;
//   3. each piece's bytes map to GPT-2's printable characters and are merged by rank (ignore_merges:
//      a piece that is itself in the vocab is one token);
//   4. a TemplateProcessing post-processor adds its special tokens around the single sequence.
// Everything else a tokenizer.json can say (a normalizer, byte fallback, dropout, another model)
// is refused at load, naming the key. Decoding maps the characters back to bytes. Encoding is
// thread-safe (each thread keeps its own cache of merged pieces).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace arch {

class HfTokenizer {
public:
    static HfTokenizer load(const std::string& path);  // throws arch::Error naming the file and key
    ~HfTokenizer();
    HfTokenizer(HfTokenizer&&) noexcept;
    HfTokenizer& operator=(HfTokenizer&&) noexcept;

    // add_special: the post-processor's tokens too (what `tokenizers` does by default).
    std::vector<int> encode(std::string_view text, bool add_special = false) const;
    std::string decode(std::span<const int> ids) const;  // throws on an id outside the vocab
    std::string decode_token(int id) const;
    int vocab_size() const;  // one past the largest id (added tokens included)
    // The end-of-text token for separating documents: <|endoftext|>, <|end_of_text|>, </s> or <|im_end|>
    // among the added tokens, else -1.
    int eot_token() const;
    // The post-processor's one token before a sequence (Llama 3's <|begin_of_text|>), else -1.
    int bos_token() const;

    struct Impl;  // defined in hf_tokenizer.cpp

private:
    explicit HfTokenizer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace arch
