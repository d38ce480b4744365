// core/text_inputs.cpp: DocumentReader (text_inputs.h): files, folders and globs; zstd (libzstd) and
// gzip (zlib) streams; JSON lines (nlohmann::json); UTF-8 checks; pieces cut where the pre-splitter cuts.
// Holds at most one read block, one line (or a document's uncut tail) and one piece at a time.
#include "core/text_inputs.h"

#include <glob.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/error.h"
#include "core/tokenizer.h"

namespace arch {

namespace fs = std::filesystem;

namespace {

constexpr size_t kReadBytes = 1 << 20;
constexpr size_t kMaxPieceBytes = 64 << 20;  // a text with no safe cut is cut at a character this far in
constexpr size_t kMaxLineBytes = 1u << 30;   // one JSON line (one document) at most

enum class Compression { none, zstd, gzip };

struct Format {
    bool json = false;
    Compression compression = Compression::none;
};

// The format a file's name says, or nothing.
std::optional<Format> format_of(const std::string& path) {
    std::string name = fs::path(path).filename().string();
    Format f;
    if (name.ends_with(".zst")) f.compression = Compression::zstd, name.resize(name.size() - 4);
    else if (name.ends_with(".gz")) f.compression = Compression::gzip, name.resize(name.size() - 3);
    if (name.ends_with(".txt")) return f;
    if (name.ends_with(".jsonl") || name.ends_with(".json")) {
        f.json = true;
        return f;
    }
    return std::nullopt;
}

constexpr const char* kFormats = ".txt, .jsonl or .json, each optionally .zst or .gz";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// The last place in text at or after `from` where encoding the two sides apart gives the tokens of
// encoding text whole; 0 if none. pretoken_safe_prefix's cut after a newline is only safe where that
// newline is a whitespace run of its own: the pre-splitter leaves the last space of a longer run
// ("\n\nIt") to the word after it, but at the end of a text it takes the whole run as one piece.
size_t safe_cut(std::string_view text, size_t from) {
    const std::string_view tail = text.substr(from);
    for (size_t cut = pretoken_safe_prefix(tail); cut > 0; cut = pretoken_safe_prefix(tail.substr(0, cut - 1)))
        if (from + cut < 2 || !is_space(text[from + cut - 2])) return from + cut;
    return 0;
}

// A cut at or below `at` that does not split a UTF-8 sequence (at most 3 bytes back).
size_t character_boundary(std::string_view text, size_t at) {
    size_t cut = at;
    while (cut > 0 && at - cut < 3 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    return cut > 0 ? cut : at;
}

std::string line_label(const std::string& file, uint64_t line) { return "'" + file + "' line " + std::to_string(line); }

}  // namespace

bool is_json_lines(const std::string& path) {
    const std::optional<Format> f = format_of(path);
    return f && f->json;
}

size_t invalid_utf8_at(std::string_view text) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    size_t i = 0;
    while (i < n) {
        if (i + 8 <= n) {  // eight ASCII bytes at once
            uint64_t word;
            std::memcpy(&word, s + i, 8);
            if ((word & 0x8080808080808080ULL) == 0) {
                i += 8;
                continue;
            }
        }
        const unsigned char c = s[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        size_t len;
        unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
        if (c >= 0xC2 && c <= 0xDF) len = 2;
        else if (c == 0xE0) len = 3, lo = 0xA0;
        else if (c == 0xED) len = 3, hi = 0x9F;  // no surrogates
        else if (c >= 0xE1 && c <= 0xEF) len = 3;
        else if (c == 0xF0) len = 4, lo = 0x90;
        else if (c == 0xF4) len = 4, hi = 0x8F;  // at most U+10FFFF
        else if (c >= 0xF1 && c <= 0xF3) len = 4;
        else return i;
        if (i + len > n || s[i + 1] < lo || s[i + 1] > hi) return i;
        for (size_t k = 2; k < len; ++k)
            if ((s[i + k] & 0xC0) != 0x80) return i;
        i += len;
    }
    return std::string::npos;
}

std::vector<std::string> expand_inputs(const std::vector<std::string>& args) {
    std::vector<std::string> out;
    for (const std::string& arg : args) {
        std::error_code ec;
        std::vector<std::string> found;
        if (fs::is_directory(arg, ec)) {
            for (const fs::directory_entry& e : fs::directory_iterator(arg, ec))
                if (e.is_regular_file() && format_of(e.path().string())) found.push_back(e.path().string());
            if (found.empty()) throw Error("corpus: the folder '" + arg + "' holds no corpus files (" + kFormats + ")");
        } else if (fs::is_regular_file(arg, ec)) {
            found.push_back(arg);
        } else if (arg.find_first_of("*?[") != std::string::npos) {
            glob_t g{};
            if (::glob(arg.c_str(), 0, nullptr, &g) == 0)
                for (size_t i = 0; i < g.gl_pathc; ++i)
                    if (fs::is_regular_file(g.gl_pathv[i], ec)) found.emplace_back(g.gl_pathv[i]);
            ::globfree(&g);
            if (found.empty()) throw Error("corpus: no file matches '" + arg + "'");
        } else {
            throw Error("corpus: input '" + arg + "' does not exist or is not a file");
        }
        std::sort(found.begin(), found.end());
        for (const std::string& f : found)
            if (!format_of(f)) throw Error("corpus: input '" + f + "' is not a corpus file: expected " + kFormats);
        out.insert(out.end(), found.begin(), found.end());
    }
    if (out.empty()) throw Error(std::string("corpus: no input files given; expected ") + kFormats + " files");
    return out;
}

// ---- a file's bytes, decompressed ----------------------------------------------------------------

class DocumentReader::Source {
public:
    Source(std::string path, Compression compression) : path_(std::move(path)), compression_(compression) {
        in_.open(path_, std::ios::binary);
        if (!in_) throw Error("corpus: input '" + path_ + "' cannot be opened: " + std::strerror(errno));
        raw_.resize(kReadBytes);
        if (compression_ == Compression::zstd) {
            zstd_.reset(ZSTD_createDCtx());
            if (!zstd_) throw Error("corpus: cannot create a zstd decompressor");
        } else if (compression_ == Compression::gzip) {
            gzip_ = std::make_unique<z_stream>();
            if (inflateInit2(gzip_.get(), 15 + 32) != Z_OK) throw Error("corpus: cannot create a gzip decompressor");
        }
    }
    ~Source() {
        if (gzip_) inflateEnd(gzip_.get());
    }
    uint64_t stored_bytes_read() const { return stored_read_; }

    // Appends up to about kReadBytes of the file's text to out; false at its end.
    bool read(std::string& out) {
        if (compression_ == Compression::none) {
            if (!fill()) return false;
            out.append(raw_.data() + raw_pos_, raw_len_ - raw_pos_);
            raw_pos_ = raw_len_;
            return true;
        }
        const size_t before = out.size();
        while (out.size() == before) {
            // A decompressor that filled its output last time may hold more, even with its input all read.
            const bool have_input = raw_pos_ < raw_len_ || fill();
            if (!have_input && !output_full_) {
                if (compression_ == Compression::zstd && (zstd_last_ != 0 || !any_))
                    throw Error("corpus: input '" + path_ + "' is truncated: " +
                                (any_ ? "its zstd frame ends early" : "it is empty, expected a zstd frame"));
                if (compression_ == Compression::gzip && (!gzip_ended_ || !any_))
                    throw Error("corpus: input '" + path_ + "' is truncated: " +
                                (any_ ? "its gzip stream ends early" : "it is empty, expected a gzip stream"));
                return false;
            }
            any_ = any_ || have_input;
            const size_t at = out.size();
            out.resize(at + kReadBytes);
            const size_t made = compression_ == Compression::zstd ? unzstd(out.data() + at) : gunzip(out.data() + at);
            out.resize(at + made);
            output_full_ = made == kReadBytes;
        }
        return true;
    }

private:
    bool fill() {
        if (raw_pos_ < raw_len_) return true;
        in_.read(raw_.data(), static_cast<std::streamsize>(raw_.size()));
        if (in_.bad()) throw Error("corpus: reading input '" + path_ + "' failed");
        raw_pos_ = 0;
        raw_len_ = static_cast<size_t>(in_.gcount());
        stored_read_ += raw_len_;
        return raw_len_ > 0;
    }
    size_t unzstd(char* out) {
        ZSTD_inBuffer input{raw_.data(), raw_len_, raw_pos_};
        ZSTD_outBuffer output{out, kReadBytes, 0};
        zstd_last_ = ZSTD_decompressStream(zstd_.get(), &output, &input);
        if (ZSTD_isError(zstd_last_))
            throw Error("corpus: input '" + path_ + "' is not valid zstd data: " + ZSTD_getErrorName(zstd_last_));
        raw_pos_ = input.pos;
        return output.pos;
    }
    size_t gunzip(char* out) {
        z_stream& z = *gzip_;
        if (gzip_ended_ && raw_pos_ < raw_len_) {  // another gzip member follows (`cat a.gz b.gz` is valid gzip)
            inflateReset(&z);
            gzip_ended_ = false;
        }
        z.next_in = reinterpret_cast<Bytef*>(raw_.data() + raw_pos_);
        z.avail_in = static_cast<uInt>(raw_len_ - raw_pos_);
        z.next_out = reinterpret_cast<Bytef*>(out);
        z.avail_out = static_cast<uInt>(kReadBytes);
        const int rc = inflate(&z, Z_NO_FLUSH);
        if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
            throw Error("corpus: input '" + path_ + "' is not valid gzip data: " + (z.msg ? z.msg : "inflate failed"));
        gzip_ended_ = rc == Z_STREAM_END;
        raw_pos_ = raw_len_ - z.avail_in;
        return kReadBytes - z.avail_out;
    }

    std::string path_;
    Compression compression_;
    std::ifstream in_;
    std::vector<char> raw_;
    size_t raw_pos_ = 0, raw_len_ = 0;
    uint64_t stored_read_ = 0;
    bool any_ = false;
    bool output_full_ = false;  // the last call filled the output: the decompressor may hold more
    std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> zstd_{nullptr, ZSTD_freeDCtx};
    size_t zstd_last_ = 0;
    std::unique_ptr<z_stream> gzip_;
    bool gzip_ended_ = false;
};

// ---- documents ---------------------------------------------------------------------------------------

DocumentReader::DocumentReader(std::vector<std::string> files, InputOptions options)
    : files_(std::move(files)), options_(std::move(options)) {
    for (const std::string& f : files_) {
        if (!format_of(f)) throw Error("corpus: input '" + f + "' is not a corpus file: expected " + kFormats);
        std::error_code ec;
        const uint64_t size = fs::file_size(f, ec);
        if (ec) throw Error("corpus: input '" + f + "' cannot be read: " + ec.message());
        bytes_total_ += size;
    }
}

DocumentReader::~DocumentReader() = default;

uint64_t DocumentReader::bytes_read() const { return bytes_before_ + (source_ ? source_->stored_bytes_read() : 0); }
uint64_t DocumentReader::bytes_total() const { return bytes_total_; }

bool DocumentReader::open_next_file() {
    if (source_) bytes_before_ += source_->stored_bytes_read();
    source_.reset();
    if (next_file_ == files_.size()) return false;
    const Format f = *format_of(files_[next_file_]);
    source_ = std::make_unique<Source>(files_[next_file_], f.compression);
    ++next_file_;
    json_ = f.json;
    line_ = 0;
    pending_.clear();
    line_at_ = 0;
    source_done_ = false;
    text_started_ = false;
    return true;
}

bool DocumentReader::read_more() {
    if (source_done_) return false;
    if (!source_->read(pending_)) source_done_ = true;
    return !source_done_;
}

void DocumentReader::bad_line(uint64_t line, const std::string& why) {
    const std::string what = "corpus: " + line_label(files_[next_file_ - 1], line) + ": " + why;
    if (!options_.skip_bad_lines) throw Error(what + " (--skip-bad-lines drops such lines and counts them)");
    ++bad_lines_;
}

bool DocumentReader::next(TextPiece& piece) {
    for (;;) {
        if (!source_ && !open_next_file()) return false;
        if (json_ ? next_json_piece(piece) : next_text_piece(piece)) {
            text_bytes_ += piece.text.size();
            return true;
        }
        if (!open_next_file()) return false;
    }
}

// A .txt file is one document: its pieces in order, the first marked as the document's start (an
// empty file is one empty piece, so it still gets its separator). Lines with invalid UTF-8 are
// refused or, skipping, dropped.
bool DocumentReader::next_text_piece(TextPiece& piece) {
    size_t cut = 0;
    for (size_t from = 0;;) {
        cut = safe_cut(pending_, from);
        if (cut > 0) break;
        if (pending_.size() > kMaxPieceBytes) {
            cut = character_boundary(pending_, pending_.size() - 1);
            break;
        }
        from = pending_.empty() ? 0 : pending_.size() - 1;  // only new bytes (and the one before) can hold a cut
        if (!read_more()) {
            cut = pending_.size();
            break;
        }
    }
    if (cut == 0 && text_started_) return false;  // the file is done
    piece.text = checked_text(pending_.substr(0, cut));
    pending_.erase(0, cut);
    piece.starts_document = !text_started_;
    if (!text_started_) ++documents_;
    piece.document = documents_ - 1;
    text_started_ = true;
    return true;
}

// text, with its lines counted into line_; a line holding invalid UTF-8 is refused or dropped.
std::string DocumentReader::checked_text(std::string text) {
    if (!options_.check_text_utf8 || invalid_utf8_at(text) == std::string::npos) {
        line_ += static_cast<uint64_t>(std::count(text.begin(), text.end(), '\n'));
        return text;
    }
    std::string kept;
    for (size_t begin = 0; begin < text.size();) {
        const size_t nl = text.find('\n', begin);
        const size_t end = nl == std::string::npos ? text.size() : nl + 1;
        const std::string_view line(text.data() + begin, end - begin);
        if (const size_t bad = invalid_utf8_at(line); bad == std::string::npos) {
            kept.append(line);
        } else {
            char byte[8];
            std::snprintf(byte, sizeof(byte), "0x%02X", static_cast<unsigned char>(line[bad]));
            bad_line(line_ + 1, std::string("invalid UTF-8 (byte ") + byte + " at column " + std::to_string(bad + 1) + ")");
        }
        if (nl != std::string::npos) ++line_;
        begin = end;
    }
    return kept;
}

// A JSON-lines file: each non-blank line an object whose text_field is the document. A long document
// is delivered in pieces (cut_), the first marked as its start.
bool DocumentReader::next_json_piece(TextPiece& piece) {
    if (!cut_.empty()) {
        piece.text = std::move(cut_.back());
        cut_.pop_back();
        piece.starts_document = false;
        piece.document = documents_ - 1;
        return true;
    }
    for (;;) {
        // Lines are taken from line_at_ on; the bytes before it are dropped only when more are read.
        size_t nl;
        for (size_t from = line_at_; (nl = pending_.find('\n', from)) == std::string::npos;) {
            if (pending_.size() - line_at_ > kMaxLineBytes)
                throw Error("corpus: " + line_label(files_[next_file_ - 1], line_ + 1) + " is longer than " +
                            std::to_string(kMaxLineBytes >> 20) + " MiB: is this really a JSON-lines file?");
            pending_.erase(0, line_at_);
            line_at_ = 0;
            from = pending_.size();
            if (!read_more()) break;
        }
        if (nl == std::string::npos && pending_.size() == line_at_) return false;
        const size_t end = nl == std::string::npos ? pending_.size() : nl;
        const std::string_view line(pending_.data() + line_at_, end - line_at_);
        const uint64_t number = ++line_;
        std::string text;
        bool ok = false;
        if (line.find_first_not_of(" \t\r") == std::string_view::npos) {
            // a blank line holds no document
        } else if (const size_t bad = invalid_utf8_at(line); bad != std::string::npos) {
            bad_line(number, "invalid UTF-8 at column " + std::to_string(bad + 1));
        } else {
            nlohmann::json j;
            bool parsed = false;
            try {
                j = nlohmann::json::parse(line);
                parsed = true;
            } catch (const nlohmann::json::exception& e) {
                bad_line(number, std::string("invalid JSON: ") + e.what());
            }
            if (!parsed) {
                // skipped
            } else if (!j.is_object()) {
                bad_line(number, "expected a JSON object with a \"" + options_.text_field + "\" field, found " + j.type_name());
            } else if (!j.contains(options_.text_field)) {
                bad_line(number, "the object has no \"" + options_.text_field + "\" field (--text-field names another)");
            } else if (!j.at(options_.text_field).is_string()) {
                bad_line(number, "the \"" + options_.text_field + "\" field is " + j.at(options_.text_field).type_name() +
                                     ", expected a string");
            } else {
                text = j.at(options_.text_field).get<std::string>();
                ok = true;
            }
        }
        line_at_ = nl == std::string::npos ? pending_.size() : nl + 1;
        if (!ok) continue;
        // Cut a long document where the pre-splitter cuts; pieces are kept in reverse for pop_back.
        std::vector<std::string> pieces;
        while (text.size() > kMaxPieceBytes) {
            size_t cut = safe_cut(std::string_view(text).substr(0, kMaxPieceBytes), 0);
            if (cut == 0) cut = character_boundary(text, kMaxPieceBytes);
            pieces.push_back(text.substr(0, cut));
            text.erase(0, cut);
        }
        pieces.push_back(std::move(text));
        std::reverse(pieces.begin(), pieces.end());
        piece.text = std::move(pieces.back());
        pieces.pop_back();
        cut_ = std::move(pieces);
        piece.starts_document = true;
        piece.document = documents_++;
        return true;
    }
}

}  // namespace arch
