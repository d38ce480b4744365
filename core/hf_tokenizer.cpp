// core/hf_tokenizer.cpp: HfTokenizer (hf_tokenizer.h): tokenizer.json parsing (nlohmann::json), the
// pre-tokenizer's regexes on PCRE2, and byte-level BPE merged in the order `tokenizers` merges.
#include "core/hf_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <queue>
#include <unordered_map>

#include "core/error.h"
#include "core/file_io.h"

namespace arch {
namespace {

using json = nlohmann::json;

std::atomic<uint64_t> next_serial{1};  // HfTokenizer::Impl::serial

// GPT-2's split, which ByteLevel applies when use_regex is true.
constexpr const char* kByteLevelRegex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// GPT-2's bytes_to_unicode: printable bytes stand for themselves, the rest for 256, 257, ...
std::array<std::string, 256> byte_chars() {
    std::array<std::string, 256> out;
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
        const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        const unsigned cp = printable ? static_cast<unsigned>(b) : 256u + static_cast<unsigned>(extra++);
        std::string s;
        if (cp < 0x80) s += static_cast<char>(cp);
        else s += static_cast<char>(0xC0 | (cp >> 6)), s += static_cast<char>(0x80 | (cp & 0x3F));  // cp < 0x800
        out[static_cast<std::size_t>(b)] = s;
    }
    return out;
}

// One compiled pattern (UTF, Unicode properties, invalid UTF-8 matched as non-characters), JIT-ed.
// Matching is const and thread-safe: each call takes match data of its own.
class Regex {
public:
    explicit Regex(const std::string& pattern, const std::string& where) {
        int err = 0;
        PCRE2_SIZE at = 0;
        code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                              PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &at, nullptr);
        if (!code_) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(err, msg, sizeof(msg));
            throw Error(where + ": the regex does not compile at offset " + std::to_string(at) + ": " +
                        reinterpret_cast<const char*>(msg));
        }
        pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);  // falls back to the interpreter if JIT is unavailable
    }
    ~Regex() { pcre2_code_free(code_); }
    Regex(const Regex&) = delete;
    Regex& operator=(const Regex&) = delete;
    // Calls fn(begin, end) for every non-overlapping match in text, left to right.
    template <class Fn>
    void for_each_match(std::string_view text, Fn&& fn) const {
        const std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> match(
            pcre2_match_data_create_from_pattern(code_, nullptr), pcre2_match_data_free);
        if (!match) throw Error("regex: out of memory for match data");
        PCRE2_SIZE from = 0;
        while (from <= text.size()) {
            const int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), from, 0, match.get(), nullptr);
            if (rc == PCRE2_ERROR_NOMATCH) return;
            if (rc < 0) throw Error("regex match failed (PCRE2 error " + std::to_string(rc) + ")");
            const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(match.get());
            if (ov[1] == ov[0]) {  // an empty match: step over one character
                if (ov[0] >= text.size()) return;
                from = ov[0] + 1;
                while (from < text.size() && (static_cast<unsigned char>(text[from]) & 0xC0) == 0x80) ++from;
                continue;
            }
            fn(ov[0], ov[1]);
            from = ov[1];
        }
    }

private:
    pcre2_code* code_ = nullptr;
};

// One splitting step of the pre-tokenizer: Isolated keeps matches and gaps as pieces, Removed only gaps.
struct SplitStep {
    std::unique_ptr<Regex> regex;
    bool keep_matches = true;
    bool add_prefix_space = false;  // ByteLevel's
};

struct AddedToken {
    int id;
    std::string content;
};

}  // namespace

struct HfTokenizer::Impl {
    std::string source;
    std::unordered_map<std::string, int> vocab;         // token string (byte characters) -> id
    std::vector<std::string> id_text;                    // id -> token string, or the added token's content
    std::vector<bool> id_added;                          // added tokens decode to their content as is
    std::unordered_map<uint64_t, std::pair<int, int>> merges;  // (left << 32 | right) -> (rank, new id)
    bool ignore_merges = false;
    std::vector<SplitStep> steps;
    std::vector<AddedToken> added;                       // longest first
    std::array<bool, 256> added_first{};                 // bytes an added token starts with
    std::vector<int> prefix, suffix;                     // TemplateProcessing's single sequence
    std::array<std::string, 256> byte_char = byte_chars();
    std::unordered_map<std::string, uint8_t> char_byte;
    int eot = -1;

    std::array<int, 256> byte_id{};                      // a byte's own token, -1 if the vocab has none
    uint64_t serial = 0;                                 // this tokenizer's number, for the piece cache

    void bpe(std::string_view piece, std::vector<int>& out) const;
    void bpe_cached(std::string_view piece, std::vector<int>& out) const;
    void encode_plain(std::string_view text, std::vector<int>& out) const;
};

namespace {

[[noreturn]] void refuse(const std::string& source, const std::string& key, const std::string& why) {
    throw Error("tokenizer '" + source + "': " + key + ": " + why);
}

const json& need(const json& j, const char* key, const std::string& source, const std::string& path) {
    if (!j.is_object() || !j.contains(key)) refuse(source, path + key, "missing");
    return j.at(key);
}

// A token id: a whole number in 0..2^24-1 (16.7M ids, far above any model's). One past uint32 is
// named as such, since token shards hold at most uint32 ids.
int checked_id(const json& id, const std::string& source, const std::string& key) {
    if (!id.is_number_integer()) refuse(source, key, "id " + id.dump() + " is not a whole number");
    if (id.is_number_unsigned() && id.get<uint64_t>() > UINT32_MAX)
        refuse(source, key, "id " + id.dump() + " exceeds uint32: token shards hold at most 4,294,967,296 ids");
    const int64_t i = id.get<int64_t>();
    if (i < 0 || i >= (1 << 24)) refuse(source, key, "id " + std::to_string(i) + " out of range (0.." + std::to_string((1 << 24) - 1) + ")");
    return static_cast<int>(i);
}

bool flag(const json& j, const char* key, bool fallback) {
    if (!j.contains(key) || j.at(key).is_null()) return fallback;
    return j.at(key).get<bool>();
}

void add_pre_tokenizer(HfTokenizer::Impl& t, const json& p, const std::string& key, bool& byte_level) {
    const std::string type = need(p, "type", t.source, key + ".").get<std::string>();
    if (type == "Sequence") {
        const json& list = need(p, "pretokenizers", t.source, key + ".");
        for (std::size_t i = 0; i < list.size(); ++i)
            add_pre_tokenizer(t, list[i], key + ".pretokenizers[" + std::to_string(i) + "]", byte_level);
    } else if (type == "ByteLevel") {
        byte_level = true;
        const bool prefix = flag(p, "add_prefix_space", false);
        if (flag(p, "use_regex", true)) {
            t.steps.push_back({std::make_unique<Regex>(kByteLevelRegex, "ByteLevel"), true, prefix});
        } else if (prefix) {
            t.steps.push_back({nullptr, true, true});
        }
    } else if (type == "Split") {
        const json& pattern = need(p, "pattern", t.source, key + ".");
        std::string regex;
        if (pattern.contains("Regex")) {
            regex = pattern.at("Regex").get<std::string>();
        } else if (pattern.contains("String")) {
            for (char ch : pattern.at("String").get<std::string>()) {  // a literal: escape every character
                if (std::string_view("\\^$.|?*+()[]{}").find(ch) != std::string_view::npos) regex += '\\';
                regex += ch;
            }
        } else {
            refuse(t.source, key + ".pattern", "neither Regex nor String");
        }
        if (flag(p, "invert", false)) refuse(t.source, key + ".invert", "true is not supported");
        const std::string behavior = need(p, "behavior", t.source, key + ".").get<std::string>();
        if (behavior != "Isolated" && behavior != "Removed")
            refuse(t.source, key + ".behavior", "'" + behavior + "' is not supported (Isolated or Removed)");
        t.steps.push_back({std::make_unique<Regex>(regex, "tokenizer '" + t.source + "': " + key + ".pattern"), behavior == "Isolated", false});
    } else {
        refuse(t.source, key + ".type", "'" + type + "' is not supported (ByteLevel, Split, Sequence)");
    }
}

void read_post_processor(HfTokenizer::Impl& t, const json& p) {
    if (p.is_null()) return;
    const std::string type = need(p, "type", t.source, "post_processor.").get<std::string>();
    if (type == "ByteLevel") return;  // offsets only
    if (type != "TemplateProcessing") refuse(t.source, "post_processor.type", "'" + type + "' is not supported (ByteLevel, TemplateProcessing)");
    const json& specials = need(p, "special_tokens", t.source, "post_processor.");
    bool seen_sequence = false;
    for (const json& item : need(p, "single", t.source, "post_processor.")) {
        if (item.contains("Sequence")) {
            if (seen_sequence) refuse(t.source, "post_processor.single", "more than one sequence");
            seen_sequence = true;
            continue;
        }
        const std::string name = item.at("SpecialToken").at("id").get<std::string>();
        if (!specials.contains(name)) refuse(t.source, "post_processor.special_tokens", "'" + name + "' missing");
        for (const json& id : specials.at(name).at("ids")) (seen_sequence ? t.suffix : t.prefix).push_back(id.get<int>());
    }
    if (!seen_sequence) refuse(t.source, "post_processor.single", "no sequence");
}

}  // namespace

HfTokenizer HfTokenizer::load(const std::string& path) {
    auto t = std::make_unique<Impl>();
    t->source = path;
    json j;
    try {
        j = json::parse(read_text_file(path, std::size_t{1} << 30));
    } catch (const json::exception& e) {
        throw Error("tokenizer '" + path + "' is not valid JSON: " + e.what());
    }
    try {
        const json& model = need(j, "model", path, "");
        const std::string type = model.value("type", std::string("BPE"));
        if (type != "BPE") refuse(path, "model.type", "'" + type + "' is not supported (BPE)");
        if (flag(model, "byte_fallback", false)) refuse(path, "model.byte_fallback", "true is not supported");
        if (model.contains("dropout") && !model.at("dropout").is_null()) refuse(path, "model.dropout", "is not supported");
        for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"})
            if (model.contains(k) && !model.at(k).is_null() && !model.at(k).get<std::string>().empty())
                refuse(path, std::string("model.") + k, "is not supported");
        t->ignore_merges = flag(model, "ignore_merges", false);
        int size = 0;
        for (const auto& [token, id] : need(model, "vocab", path, "model.").items()) {
            const int i = checked_id(id, path, "model.vocab");
            t->vocab[token] = i;
            size = std::max(size, i + 1);
        }
        for (const json& a : j.value("added_tokens", json::array())) {
            const int id = checked_id(a.at("id"), path, "added_tokens.id");
            for (const char* k : {"lstrip", "rstrip", "single_word"})
                if (flag(a, k, false)) refuse(path, std::string("added_tokens.") + k, "true is not supported");
            t->added.push_back({id, a.at("content").get<std::string>()});
            if (t->added.back().content.empty()) refuse(path, "added_tokens.content", "empty");
            size = std::max(size, id + 1);
        }
        t->id_text.assign(static_cast<std::size_t>(size), std::string());
        t->id_added.assign(static_cast<std::size_t>(size), false);
        for (const auto& [token, id] : t->vocab) t->id_text[static_cast<std::size_t>(id)] = token;
        for (const AddedToken& a : t->added) {
            t->id_text[static_cast<std::size_t>(a.id)] = a.content;
            t->id_added[static_cast<std::size_t>(a.id)] = true;
        }
        for (const AddedToken& a : t->added) t->added_first[static_cast<unsigned char>(a.content[0])] = true;
        std::ranges::stable_sort(t->added, [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
        for (const char* name : {"<|endoftext|>", "<|end_of_text|>", "</s>", "<|im_end|>"})
            for (const AddedToken& a : t->added)
                if (t->eot < 0 && a.content == name) t->eot = a.id;

        int rank = 0;
        for (const json& m : need(model, "merges", path, "model.")) {
            std::string left, right;
            if (m.is_string()) {  // "a b" (tokenizers < 0.20)
                const std::string s = m.get<std::string>();
                const std::size_t space = s.find(' ', 1);
                if (space == std::string::npos) refuse(path, "model.merges", "'" + s + "' is not two tokens");
                left = s.substr(0, space), right = s.substr(space + 1);
            } else {  // ["a", "b"]
                left = m.at(0).get<std::string>(), right = m.at(1).get<std::string>();
            }
            const auto l = t->vocab.find(left), r = t->vocab.find(right), n = t->vocab.find(left + right);
            if (l == t->vocab.end() || r == t->vocab.end() || n == t->vocab.end())
                refuse(path, "model.merges", "merge " + std::to_string(rank) + " ('" + left + "' '" + right + "') names a token not in the vocab");
            t->merges.emplace((static_cast<uint64_t>(l->second) << 32) | static_cast<uint32_t>(r->second), std::pair{rank++, n->second});
        }

        if (j.contains("normalizer") && !j.at("normalizer").is_null())
            refuse(path, "normalizer", "'" + j.at("normalizer").value("type", std::string("?")) + "' is not supported (none)");
        bool byte_level = false;
        if (j.contains("pre_tokenizer") && !j.at("pre_tokenizer").is_null())
            add_pre_tokenizer(*t, j.at("pre_tokenizer"), "pre_tokenizer", byte_level);
        if (!byte_level) refuse(path, "pre_tokenizer", "no ByteLevel step: only byte-level BPE is supported");
        read_post_processor(*t, j.value("post_processor", json()));
    } catch (const json::exception& e) {
        throw Error("tokenizer '" + path + "': unexpected content: " + e.what());
    }
    for (int b = 0; b < 256; ++b) {
        const std::string& c = t->byte_char[static_cast<std::size_t>(b)];
        t->char_byte[c] = static_cast<uint8_t>(b);
        const auto it = t->vocab.find(c);
        t->byte_id[static_cast<std::size_t>(b)] = it == t->vocab.end() ? -1 : it->second;
    }
    t->serial = next_serial.fetch_add(1);
    return HfTokenizer(std::move(t));
}

HfTokenizer::HfTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HfTokenizer::~HfTokenizer() = default;
HfTokenizer::HfTokenizer(HfTokenizer&&) noexcept = default;
HfTokenizer& HfTokenizer::operator=(HfTokenizer&&) noexcept = default;

int HfTokenizer::vocab_size() const { return static_cast<int>(impl_->id_text.size()); }
int HfTokenizer::eot_token() const { return impl_->eot; }
int HfTokenizer::bos_token() const { return impl_->prefix.size() == 1 ? impl_->prefix[0] : -1; }

// One piece: its bytes as byte characters, one symbol each, then the lowest-ranked adjacent pair
// merged first (the leftmost among equals), as `tokenizers`' Word::merge_all does.
void HfTokenizer::Impl::bpe(std::string_view piece, std::vector<int>& out) const {
    if (ignore_merges) {
        std::string chars;
        for (char c : piece) chars += byte_char[static_cast<unsigned char>(c)];
        if (auto it = vocab.find(chars); it != vocab.end()) return out.push_back(it->second);
    }
    struct Symbol {
        int id, prev, next;
        bool alive;
    };
    std::vector<Symbol> sym;
    sym.reserve(piece.size());
    for (unsigned char c : piece) {
        if (byte_id[c] < 0) throw Error("tokenizer '" + source + "': the byte " + std::to_string(c) + " has no token");
        const int n = static_cast<int>(sym.size());
        sym.push_back({byte_id[c], n - 1, n + 1, true});
    }
    if (sym.empty()) return;
    sym.back().next = -1;
    using Candidate = std::tuple<int, int, int>;  // (rank, position of the left symbol, new id)
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
    auto consider = [&](int left) {
        if (left < 0 || sym[left].next < 0) return;
        const auto it = merges.find((static_cast<uint64_t>(sym[left].id) << 32) | static_cast<uint32_t>(sym[sym[left].next].id));
        if (it != merges.end()) queue.emplace(it->second.first, left, it->second.second);
    };
    for (int i = 0; i + 1 < static_cast<int>(sym.size()); ++i) consider(i);
    while (!queue.empty()) {
        const auto [rank, left, id] = queue.top();
        queue.pop();
        if (!sym[left].alive || sym[left].next < 0) continue;
        const int right = sym[left].next;
        const auto it = merges.find((static_cast<uint64_t>(sym[left].id) << 32) | static_cast<uint32_t>(sym[right].id));
        if (it == merges.end() || it->second.first != rank) continue;  // this pair changed since it was queued
        sym[left].id = id;
        sym[right].alive = false;
        sym[left].next = sym[right].next;
        if (sym[right].next >= 0) sym[sym[right].next].prev = left;
        consider(sym[left].prev);
        consider(left);
    }
    for (int i = 0; i >= 0; i = sym[i].next) out.push_back(sym[i].id);
}

namespace {

// The pieces this thread merged lately, for one tokenizer (by its serial number, never reused): most
// pieces of a text are words seen before, as in `tokenizers`' own cache. Bounded: cleared when full.
struct PieceCache {
    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    uint64_t owner = 0;
    std::unordered_map<std::string, std::pair<uint32_t, uint32_t>, Hash, std::equal_to<>> index;  // piece -> ids range
    std::vector<int> ids;
};
constexpr std::size_t kPieceCacheEntries = 1 << 16;
thread_local PieceCache piece_cache;

}  // namespace

void HfTokenizer::Impl::bpe_cached(std::string_view piece, std::vector<int>& out) const {
    PieceCache& cache = piece_cache;
    if (cache.owner != serial || cache.index.size() >= kPieceCacheEntries || cache.ids.size() >= 16 * kPieceCacheEntries) {
        cache.index.clear();
        cache.ids.clear();
        cache.owner = serial;
    }
    auto it = cache.index.find(piece);
    if (it == cache.index.end()) {
        const auto begin = static_cast<uint32_t>(cache.ids.size());
        bpe(piece, cache.ids);
        it = cache.index.emplace(std::string(piece), std::pair{begin, static_cast<uint32_t>(cache.ids.size()) - begin}).first;
    }
    const int* first = cache.ids.data() + it->second.first;
    out.insert(out.end(), first, first + it->second.second);
}

// Text with no added token in it: the pre-tokenizer's steps, each splitting every piece further, then BPE.
// Pieces are views of the text, or of `owned` where ByteLevel put a space in front.
void HfTokenizer::Impl::encode_plain(std::string_view text, std::vector<int>& out) const {
    std::deque<std::string> owned;
    std::vector<std::string_view> pieces{text}, next;
    for (const SplitStep& step : steps) {
        next.clear();
        for (std::string_view p : pieces) {
            if (step.add_prefix_space && !p.empty() && p[0] != ' ') p = owned.emplace_back(" " + std::string(p));
            if (!step.regex) {
                next.push_back(p);
                continue;
            }
            std::size_t done = 0;
            step.regex->for_each_match(p, [&](std::size_t b, std::size_t e) {
                if (b > done) next.push_back(p.substr(done, b - done));
                if (step.keep_matches) next.push_back(p.substr(b, e - b));
                done = e;
            });
            if (done < p.size()) next.push_back(p.substr(done));
        }
        pieces.swap(next);
    }
    for (std::string_view p : pieces) bpe_cached(p, out);
}

std::vector<int> HfTokenizer::encode(std::string_view text, bool add_special) const {
    std::vector<int> out;
    if (add_special) out = impl_->prefix;
    std::size_t plain = 0;  // start of the text not yet encoded
    for (std::size_t i = 0; i < text.size();) {
        const AddedToken* hit = nullptr;
        if (impl_->added_first[static_cast<unsigned char>(text[i])])
            for (const AddedToken& a : impl_->added)  // longest first
                if (text.compare(i, a.content.size(), a.content) == 0) {
                    hit = &a;
                    break;
                }
        if (!hit) {
            ++i;
            continue;
        }
        if (i > plain) impl_->encode_plain(text.substr(plain, i - plain), out);
        out.push_back(hit->id);
        i += hit->content.size();
        plain = i;
    }
    if (plain < text.size()) impl_->encode_plain(text.substr(plain), out);
    if (add_special) out.insert(out.end(), impl_->suffix.begin(), impl_->suffix.end());
    return out;
}

std::string HfTokenizer::decode_token(int id) const {
    if (id < 0 || id >= vocab_size() || (impl_->id_text[static_cast<std::size_t>(id)].empty()))
        throw Error("token id " + std::to_string(id) + " is not in the vocab of '" + impl_->source + "'");
    const std::string& s = impl_->id_text[static_cast<std::size_t>(id)];
    if (impl_->id_added[static_cast<std::size_t>(id)]) return s;
    std::string bytes;
    for (std::size_t i = 0; i < s.size();) {
        const std::size_t len = (static_cast<unsigned char>(s[i]) & 0xE0) == 0xC0 ? 2 : 1;
        const auto it = impl_->char_byte.find(s.substr(i, len));
        if (it == impl_->char_byte.end()) throw Error("token " + std::to_string(id) + " of '" + impl_->source + "' is not byte-level");
        bytes += static_cast<char>(it->second);
        i += len;
    }
    return bytes;
}

std::string HfTokenizer::decode(std::span<const int> ids) const {
    std::string out;
    for (int id : ids) out += decode_token(id);
    return out;
}

}  // namespace arch
