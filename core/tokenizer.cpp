// core/tokenizer.cpp: byte-level BPE training, encoding, decoding and the two file formats (and a
// tokenizer.json, handed to HfTokenizer).
// Training counts unique pre-tokens once, then updates pair counts incrementally per merge (only the
// words that hold the merged pair are touched). Encoding caches each distinct pre-token per call.
// All multi-byte integers on disk are little-endian uint32 (docs/tokenizer.md).
#include "core/tokenizer.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <cstring>
#include <queue>

#include "core/bytes.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/hf_tokenizer.h"

namespace arch {

static_assert(std::endian::native == std::endian::little, "tokenizer files are read as little-endian");

namespace {

constexpr char kMagic[8] = {'A', 'R', 'C', 'H', 'B', 'P', 'E', '\0'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kLlmcMagic = 20240328;
constexpr int kLlmcHeaderInts = 256;
constexpr size_t kMaxPieceBytes = 512;  // longer pre-tokens are cut, keeping encoding linear
const std::string kEotText = "<|endoftext|>";

enum class ByteClass { space, letter, digit, other };

ByteClass classify(unsigned char c) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') return ByteClass::space;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80) return ByteClass::letter;
    if (c >= '0' && c <= '9') return ByteClass::digit;
    return ByteClass::other;
}

// Length of a contraction ('s 't 'm 'd 're 've 'll) starting at text[i], or 0.
size_t contraction_length(std::string_view text, size_t i) {
    if (text[i] != '\'' || i + 1 >= text.size()) return 0;
    const char a = text[i + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (i + 2 < text.size()) {
        const char b = text[i + 2];
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    }
    return 0;
}

// GPT-2's pre-split on bytes: contractions, ` ?letters+`, ` ?digits+`, ` ?other+`, and whitespace
// runs that leave their last character to the next piece when a non-space follows. Bytes >= 0x80
// count as letters, so UTF-8 words stay whole.
template <typename Emit>
void split_pretokens(std::string_view text, Emit&& emit) {
    auto emit_cut = [&](size_t begin, size_t end) {
        for (size_t b = begin; b < end; b += kMaxPieceBytes) emit(text.substr(b, std::min(kMaxPieceBytes, end - b)));
    };
    const size_t n = text.size();
    size_t i = 0;
    while (i < n) {
        if (size_t len = contraction_length(text, i)) {
            emit_cut(i, i + len);
            i += len;
            continue;
        }
        const size_t j = (text[i] == ' ' && i + 1 < n) ? i + 1 : i;
        const ByteClass cls = classify(static_cast<unsigned char>(text[j]));
        if (cls != ByteClass::space) {
            size_t k = j + 1;
            while (k < n && classify(static_cast<unsigned char>(text[k])) == cls) k++;
            emit_cut(i, k);
            i = k;
            continue;
        }
        size_t k = i;
        while (k < n && classify(static_cast<unsigned char>(text[k])) == ByteClass::space) k++;
        const size_t end = (k == n || k - i == 1) ? k : k - 1;
        emit_cut(i, end);
        i = end;
    }
}

uint64_t pair_key(int a, int b) { return (static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b); }
int pair_left(uint64_t key) { return static_cast<int>(key >> 32); }
int pair_right(uint64_t key) { return static_cast<int>(key & 0xffffffffu); }

void check_vocab_size(int vocab_size) {
    if (vocab_size < 257 || vocab_size > 65536)
        throw Error("tokenizer: vocab_size must be between 257 (256 bytes + <|endoftext|>) and 65536 "
                    "(ids must fit uint16 shards), got " + std::to_string(vocab_size));
}

uint32_t read_u32(const std::string& bytes, size_t offset) {
    return load_le<uint32_t>(reinterpret_cast<const std::byte*>(bytes.data() + offset));
}

void append_u32(std::string& out, uint32_t v) {
    std::byte b[4];
    store_le(b, v);
    out.append(reinterpret_cast<const char*>(b), 4);
}

// ---- training ---------------------------------------------------------------------------------

// Merge state: each distinct pre-token is a word of symbol ids with a frequency.
struct MergeTable {
    std::vector<std::vector<int>> words;
    std::vector<uint64_t> freq;
    std::unordered_map<uint64_t, int64_t> pair_count;
    std::unordered_map<uint64_t, std::vector<uint32_t>> pair_words;  // may hold stale entries
    // Max-heap on (count, then smaller pair key); entries go stale and are checked on pop.
    std::priority_queue<std::pair<int64_t, uint64_t>, std::vector<std::pair<int64_t, uint64_t>>,
                        bool (*)(const std::pair<int64_t, uint64_t>&, const std::pair<int64_t, uint64_t>&)>
        heap{[](const std::pair<int64_t, uint64_t>& x, const std::pair<int64_t, uint64_t>& y) {
            return x.first != y.first ? x.first < y.first : x.second > y.second;
        }};

    void add_word_pairs(uint32_t w, int sign) {
        const std::vector<int>& s = words[w];
        for (size_t i = 0; i + 1 < s.size(); i++) {
            const uint64_t key = pair_key(s[i], s[i + 1]);
            pair_count[key] += sign * static_cast<int64_t>(freq[w]);
            if (sign > 0) pair_words[key].push_back(w);
        }
    }

    // The most frequent pair, or false when no pair is left.
    bool pop_best(uint64_t& best) {
        while (!heap.empty()) {
            const auto [count, key] = heap.top();
            heap.pop();
            auto it = pair_count.find(key);
            const int64_t now = it == pair_count.end() ? 0 : it->second;
            if (now == count && now > 0) {
                best = key;
                return true;
            }
            if (now > 0 && now < count) heap.push({now, key});
        }
        return false;
    }

    void merge(uint64_t key, int new_id) {
        const int a = pair_left(key), b = pair_right(key);
        std::vector<uint32_t> affected = std::move(pair_words[key]);
        pair_words.erase(key);
        std::sort(affected.begin(), affected.end());
        affected.erase(std::unique(affected.begin(), affected.end()), affected.end());
        std::vector<uint64_t> grown;
        for (uint32_t w : affected) {
            std::vector<int>& s = words[w];
            bool has = false;
            for (size_t i = 0; i + 1 < s.size() && !has; i++) has = s[i] == a && s[i + 1] == b;
            if (!has) continue;
            add_word_pairs(w, -1);
            std::vector<int> merged;
            merged.reserve(s.size());
            for (size_t i = 0; i < s.size(); i++) {
                if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
                    merged.push_back(new_id);
                    i++;
                } else {
                    merged.push_back(s[i]);
                }
            }
            s = std::move(merged);
            add_word_pairs(w, +1);
            for (size_t i = 0; i + 1 < s.size(); i++)
                if (s[i] == new_id || s[i + 1] == new_id) grown.push_back(pair_key(s[i], s[i + 1]));
        }
        pair_count.erase(key);
        std::sort(grown.begin(), grown.end());
        grown.erase(std::unique(grown.begin(), grown.end()), grown.end());
        for (uint64_t g : grown) heap.push({pair_count[g], g});
    }
};

}  // namespace

void TokenizerTrainer::add_text(std::string_view text) {
    split_pretokens(text, [&](std::string_view piece) { piece_counts_[std::string(piece)]++; });
}

Tokenizer TokenizerTrainer::train(int vocab_size, const MergeProgress& progress) const {
    check_vocab_size(vocab_size);
    const int total = vocab_size - 257;
    MergeTable table;
    // Sorted words make the merge order independent of hash-map iteration order.
    std::vector<std::pair<std::string_view, uint64_t>> sorted(piece_counts_.begin(), piece_counts_.end());
    std::sort(sorted.begin(), sorted.end());
    for (const auto& [piece, count] : sorted) {
        if (piece.size() < 2) continue;  // a single byte has no pair to merge
        table.words.emplace_back(piece.begin(), piece.end());
        for (int& sym : table.words.back()) sym = static_cast<unsigned char>(sym);
        table.freq.push_back(count);
        table.add_word_pairs(static_cast<uint32_t>(table.words.size() - 1), +1);
    }
    for (const auto& [key, count] : table.pair_count) table.heap.push({count, key});

    std::vector<std::pair<int, int>> merges;
    merges.reserve(total);
    for (int m = 0; m < total; m++) {
        uint64_t best = 0;
        if (!table.pop_best(best))
            throw Error("tokenizer: the training text allows only " + std::to_string(m) +
                        " merges, but vocab_size " + std::to_string(vocab_size) + " needs " +
                        std::to_string(total) + "; use a smaller vocab_size or more text");
        merges.emplace_back(pair_left(best), pair_right(best));
        table.merge(best, 256 + m);
        if (progress && ((m + 1) % std::max(1, total / 10) == 0 || m + 1 == total)) progress(m + 1, total);
    }
    return Tokenizer::from_merges(std::move(merges), "trained tokenizer");
}

// ---- the vocabulary ---------------------------------------------------------------------------

Tokenizer Tokenizer::from_merges(std::vector<std::pair<int, int>> merges, const std::string& source) {
    Tokenizer tok;
    tok.token_bytes_.reserve(256 + merges.size() + 1);
    for (int b = 0; b < 256; b++) tok.token_bytes_.push_back(std::string(1, static_cast<char>(b)));
    for (size_t i = 0; i < merges.size(); i++) {
        const auto [a, b] = merges[i];
        const int defined = static_cast<int>(256 + i);
        if (a < 0 || b < 0 || a >= defined || b >= defined)
            throw Error(source + ": merge " + std::to_string(i) + " is (" + std::to_string(a) + ", " +
                        std::to_string(b) + "), but only ids below " + std::to_string(defined) +
                        " are defined at that point");
        if (!tok.merge_rank_.emplace(pair_key(a, b), static_cast<int>(i)).second)
            throw Error(source + ": merge " + std::to_string(i) + " (" + std::to_string(a) + ", " +
                        std::to_string(b) + ") repeats an earlier merge");
        tok.token_bytes_.push_back(tok.token_bytes_[a] + tok.token_bytes_[b]);
    }
    tok.eot_ = static_cast<int>(tok.token_bytes_.size());
    tok.token_bytes_.push_back(kEotText);
    tok.merges_ = std::move(merges);
    tok.can_encode_ = true;
    return tok;
}

Tokenizer Tokenizer::train(std::string_view text, int vocab_size, const MergeProgress& progress) {
    check_vocab_size(vocab_size);
    TokenizerTrainer trainer;
    trainer.add_text(text);
    return trainer.train(vocab_size, progress);
}

// ---- encode and decode ------------------------------------------------------------------------

void Tokenizer::encode_piece(std::string_view piece, std::vector<int>& out) const {
    std::vector<int> syms(piece.begin(), piece.end());
    for (int& s : syms) s = static_cast<unsigned char>(s);
    while (syms.size() >= 2) {
        int best_rank = INT_MAX;
        for (size_t i = 0; i + 1 < syms.size(); i++) {
            auto it = merge_rank_.find(pair_key(syms[i], syms[i + 1]));
            if (it != merge_rank_.end() && it->second < best_rank) best_rank = it->second;
        }
        if (best_rank == INT_MAX) break;
        const auto [a, b] = merges_[best_rank];
        size_t w = 0;
        for (size_t r = 0; r < syms.size(); r++) {
            if (r + 1 < syms.size() && syms[r] == a && syms[r + 1] == b) {
                syms[w++] = 256 + best_rank;
                r++;
            } else {
                syms[w++] = syms[r];
            }
        }
        syms.resize(w);
    }
    out.insert(out.end(), syms.begin(), syms.end());
}

std::vector<int> Tokenizer::encode(std::string_view text) const {
    if (!can_encode_)
        throw Error("tokenizer: this tokenizer was loaded from an llm.c gpt2_tokenizer.bin, which holds "
                    "no merges, so it can only decode; train or load an Archipelago tokenizer to encode");
    if (hf_) return hf_->encode(text);
    std::vector<int> out;
    out.reserve(text.size() / 3 + 16);
    // Cache: distinct piece -> its tokens, stored as a range of `cached`.
    std::unordered_map<std::string_view, std::pair<uint32_t, uint32_t>> cache;
    std::vector<int> cached;
    split_pretokens(text, [&](std::string_view piece) {
        auto it = cache.find(piece);
        if (it == cache.end()) {
            const auto begin = static_cast<uint32_t>(cached.size());
            encode_piece(piece, cached);
            it = cache.emplace(piece, std::make_pair(begin, static_cast<uint32_t>(cached.size()) - begin)).first;
        }
        const int* first = cached.data() + it->second.first;
        out.insert(out.end(), first, first + it->second.second);
    });
    return out;
}

int Tokenizer::document_separator() const {
    if (hf_ && hf_->bos_token() >= 0) return hf_->bos_token();
    return eot_;
}

std::string Tokenizer::decode_token(int id) const {
    if (id < 0 || id >= vocab_size())
        throw Error("tokenizer: token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                    std::to_string(vocab_size() - 1) + ")");
    return token_bytes_[id];
}

std::string Tokenizer::decode(std::span<const int> tokens) const {
    std::string out;
    for (int id : tokens) out += decode_token(id);
    return out;
}

size_t pretoken_safe_prefix(std::string_view text) {
    for (size_t i = text.size(); i-- > 1;)
        if (text[i - 1] == '\n' && classify(static_cast<unsigned char>(text[i])) != ByteClass::space) return i;
    return 0;
}

// ---- files ------------------------------------------------------------------------------------

void Tokenizer::save(const std::string& path) const {
    if (hf_) throw Error("tokenizer: cannot save '" + path + "': a tokenizer.json is used from where it lies");
    if (!can_encode_)
        throw Error("tokenizer: cannot save '" + path + "': a tokenizer loaded from llm.c's format has no merges");
    std::string out(kMagic, sizeof(kMagic));
    append_u32(out, kVersion);
    append_u32(out, static_cast<uint32_t>(vocab_size()));
    append_u32(out, static_cast<uint32_t>(eot_));
    append_u32(out, static_cast<uint32_t>(merges_.size()));
    for (const auto& [a, b] : merges_) {
        append_u32(out, static_cast<uint32_t>(a));
        append_u32(out, static_cast<uint32_t>(b));
    }
    write_file_atomic(path, byte_view(out));
}

Tokenizer Tokenizer::load(const std::string& path) {
    const std::string bytes = read_text_file(path, std::numeric_limits<std::size_t>::max());
    const std::string where = "tokenizer '" + path + "'";
    if (bytes.size() >= 4 && read_u32(bytes, 0) == kLlmcMagic) return load_llmc(path, bytes);
    if (const std::size_t first = bytes.find_first_not_of(" \t\r\n"); first != std::string::npos && bytes[first] == '{') {
        Tokenizer t;
        auto hf = std::make_shared<const HfTokenizer>(HfTokenizer::load(path));
        t.token_bytes_.resize(static_cast<std::size_t>(hf->vocab_size()));
        for (int id = 0; id < hf->vocab_size(); ++id) {
            try {
                t.token_bytes_[static_cast<std::size_t>(id)] = hf->decode_token(id);
            } catch (const Error&) {  // an id no token has: decodes to nothing
            }
        }
        t.eot_ = hf->eot_token();
        t.can_encode_ = true;
        t.hf_ = std::move(hf);
        return t;
    }
    const size_t header = sizeof(kMagic) + 16;
    if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
        throw Error(where + " is not a tokenizer file: expected the magic \"ARCHBPE\" or llm.c's 20240328 at the start");
    if (bytes.size() < header)
        throw Error(where + " is truncated: expected a " + std::to_string(header) + "-byte header, file has " +
                    std::to_string(bytes.size()) + " bytes");
    const uint32_t version = read_u32(bytes, 8), vocab = read_u32(bytes, 12);
    const uint32_t eot = read_u32(bytes, 16), num_merges = read_u32(bytes, 20);
    if (version != kVersion)
        throw Error(where + " has version " + std::to_string(version) + ", expected " + std::to_string(kVersion));
    if (num_merges > 65536 - 257 || vocab != 256 + num_merges + 1 || eot != vocab - 1)
        throw Error(where + " is corrupt: header says vocab " + std::to_string(vocab) + ", eot " +
                    std::to_string(eot) + ", " + std::to_string(num_merges) +
                    " merges; expected vocab = 257 + merges <= 65536 and eot = vocab - 1");
    const size_t expected = header + 8 * static_cast<size_t>(num_merges);
    if (bytes.size() != expected)
        throw Error(where + (bytes.size() < expected ? " is truncated" : " has trailing bytes") + ": header says " +
                    std::to_string(num_merges) + " merges (" + std::to_string(expected) + " bytes), file has " +
                    std::to_string(bytes.size()) + " bytes");
    std::vector<std::pair<int, int>> merges(num_merges);
    for (uint32_t i = 0; i < num_merges; i++) {
        const uint32_t a = read_u32(bytes, header + 8 * i), b = read_u32(bytes, header + 8 * i + 4);
        merges[i] = {static_cast<int>(std::min<uint32_t>(a, INT_MAX)), static_cast<int>(std::min<uint32_t>(b, INT_MAX))};
    }
    return from_merges(std::move(merges), where);
}

Tokenizer Tokenizer::load_llmc(const std::string& path, const std::string& bytes) {
    const std::string where = "llm.c tokenizer '" + path + "'";
    const size_t header = kLlmcHeaderInts * 4;
    if (bytes.size() < header)
        throw Error(where + " is truncated: expected a " + std::to_string(header) + "-byte header, file has " +
                    std::to_string(bytes.size()) + " bytes");
    const uint32_t version = read_u32(bytes, 4), vocab = read_u32(bytes, 8);
    if (version != 1 && version != 2)
        throw Error(where + " has version " + std::to_string(version) + ", expected 1 or 2");
    if (vocab == 0 || vocab > (1u << 24))
        throw Error(where + " is corrupt: vocab size " + std::to_string(vocab) + " is not plausible");
    // Version 1 predates the eot field: GPT-2's <|endoftext|> (50256), or the last id of a smaller vocab.
    const uint32_t eot = version == 2 ? read_u32(bytes, 12) : std::min<uint32_t>(50256, vocab - 1);
    if (eot >= vocab)
        throw Error(where + " is corrupt: eot token " + std::to_string(eot) + " is not below vocab size " +
                    std::to_string(vocab));
    Tokenizer tok;
    tok.token_bytes_.reserve(vocab);
    size_t pos = header;
    for (uint32_t id = 0; id < vocab; id++) {
        if (pos >= bytes.size() || pos + 1 + static_cast<unsigned char>(bytes[pos]) > bytes.size())
            throw Error(where + " is truncated: header says " + std::to_string(vocab) + " tokens, token " +
                        std::to_string(id) + " runs past the end of the file (" + std::to_string(bytes.size()) +
                        " bytes)");
        const size_t len = static_cast<unsigned char>(bytes[pos]);
        tok.token_bytes_.push_back(bytes.substr(pos + 1, len));
        pos += 1 + len;
    }
    if (pos != bytes.size())
        throw Error(where + " has " + std::to_string(bytes.size() - pos) + " trailing bytes after its " +
                    std::to_string(vocab) + " tokens");
    tok.eot_ = static_cast<int>(eot);
    tok.can_encode_ = false;
    return tok;
}

}  // namespace arch
