// core/corpus.cpp: prepare_corpus: stream text (plain or zstd) -> train tokenizer -> encode -> shards.
// The text is streamed in chunks cut where the pre-splitter always cuts, so chunking never changes
// the tokens; the token stream itself is held in memory (2 bytes a token) to split off val at the end.
// ensure_bench_corpus runs data/make_bench_corpus.py (fork + exec, no shell) to get its documents.
#include "core/corpus.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <span>
#include <sstream>
#include <string_view>

#include "core/error.h"
#include "core/file_io.h"
#include "core/install_paths.h"
#include "core/log.h"
#include "core/token_shard.h"
#include "core/tokenizer.h"

namespace arch {

namespace fs = std::filesystem;

namespace {

constexpr size_t kReadBytes = 1 << 20;
constexpr size_t kMaxPendingBytes = 64 << 20;  // a text with no safe cut is encoded in pieces this big
constexpr const char* kManifestHeader = "archipelago prepared corpus v1\n";

// Calls fn with the raw (decompressed if .zst) bytes of path, in order, in chunks.
void read_text_chunks(const std::string& path, const std::function<void(std::string_view)>& fn) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("corpus: input '" + path + "' cannot be opened: " + std::strerror(errno));
    std::vector<char> buf(kReadBytes);
    if (!std::string_view(path).ends_with(".zst")) {
        while (in) {
            in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
            if (in.gcount() > 0) fn(std::string_view(buf.data(), static_cast<size_t>(in.gcount())));
        }
        if (in.bad()) throw Error("corpus: reading input '" + path + "' failed");
        return;
    }
    std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
    if (!dctx) throw Error("corpus: cannot create a zstd decompressor");
    std::vector<char> out(ZSTD_DStreamOutSize());
    size_t last = 0;
    bool any = false;
    while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        ZSTD_inBuffer input{buf.data(), static_cast<size_t>(in.gcount()), 0};
        any = any || input.size > 0;
        while (input.pos < input.size) {
            ZSTD_outBuffer output{out.data(), out.size(), 0};
            last = ZSTD_decompressStream(dctx.get(), &output, &input);
            if (ZSTD_isError(last))
                throw Error("corpus: input '" + path + "' is not valid zstd data: " + ZSTD_getErrorName(last));
            if (output.pos > 0) fn(std::string_view(out.data(), output.pos));
        }
    }
    if (in.bad()) throw Error("corpus: reading input '" + path + "' failed");
    if (!any) throw Error("corpus: input '" + path + "' is empty, expected a zstd frame");
    if (last != 0) throw Error("corpus: input '" + path + "' is truncated: its zstd frame ends early");
}

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

// Like read_text_chunks, but every chunk ends where the pre-splitter cuts regardless of what follows.
void read_text_pieces(const std::string& path, const std::function<void(std::string_view)>& fn) {
    std::string pending;
    read_text_chunks(path, [&](std::string_view chunk) {
        // Only the new bytes (and the one before them) can hold a cut: the rest was searched already.
        const size_t from = pending.empty() ? 0 : pending.size() - 1;
        pending.append(chunk);
        size_t cut = safe_cut(pending, from);
        if (cut == 0 && pending.size() > kMaxPendingBytes) cut = pending.size();
        if (cut > 0) {
            fn(std::string_view(pending).substr(0, cut));
            pending.erase(0, cut);
        }
    });
    if (!pending.empty()) fn(pending);
}

uint64_t fnv1a_file(const std::string& path) {
    uint64_t h = 1469598103934665603ULL;
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("corpus: '" + path + "' cannot be opened: " + std::strerror(errno));
    std::vector<char> buf(kReadBytes);
    while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        for (std::streamsize i = 0; i < in.gcount(); i++) {
            h ^= static_cast<unsigned char>(buf[static_cast<size_t>(i)]);
            h *= 1099511628211ULL;
        }
    }
    return h;
}

// What decides the output: the inputs' names, sizes and contents, and the settings. (A tail split
// writes no val_chunk_tokens line, so preparations made before spread splits existed still match.)
std::string manifest(const std::vector<std::string>& inputs, int vocab_size, const ValSplit& val,
                     const std::string& tokenizer_path) {
    std::ostringstream m;
    m << kManifestHeader << "vocab_size " << vocab_size << "\nval_fraction " << val.fraction << "\n";
    if (val.chunk_tokens > 0) m << "val_chunk_tokens " << val.chunk_tokens << "\n";
    if (!tokenizer_path.empty())
        m << "tokenizer " << fs::path(tokenizer_path).filename().string() << " " << std::hex
          << fnv1a_file(tokenizer_path) << std::dec << "\n";
    for (const std::string& p : inputs)
        m << "input " << fs::path(p).filename().string() << " " << fs::file_size(p) << " " << std::hex
          << fnv1a_file(p) << std::dec << "\n";
    return m.str();
}

std::string read_small_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    if (in) ss << in.rdbuf();
    return ss.str();
}

std::string shard_name(const std::string& out_dir, const char* split, size_t index) {
    char name[32];
    std::snprintf(name, sizeof(name), "%s_%06zu.bin", split, index);
    return (fs::path(out_dir) / name).string();
}

// Removes what an earlier (maybe interrupted) preparation left, so old shards never match a glob.
void clear_previous(const std::string& out_dir) {
    std::error_code ec;
    fs::remove(fs::path(out_dir) / "DONE", ec);
    for (const auto& entry : fs::directory_iterator(out_dir)) {
        const std::string name = entry.path().filename().string();
        const bool shard = (name.starts_with("train_") || name.starts_with("val_")) &&
                           (name.ends_with(".bin") || name.ends_with(".bin.tmp"));
        if (shard) fs::remove(entry.path());
    }
}

size_t write_shards(const std::string& out_dir, const char* split, std::span<const uint16_t> tokens) {
    size_t index = 0;
    for (uint64_t off = 0; off < tokens.size(); off += kMaxShardTokens, index++) {
        const auto n = static_cast<size_t>(std::min<uint64_t>(kMaxShardTokens, tokens.size() - off));
        write_token_shard(shard_name(out_dir, split, index), tokens.subspan(off, n));
    }
    return index;
}

PreparedCorpus corpus_paths(const std::string& out_dir, const std::string& tokenizer_path) {
    return {(fs::path(out_dir) / "train_*.bin").string(), (fs::path(out_dir) / "val_*.bin").string(),
            tokenizer_path.empty() ? (fs::path(out_dir) / "tokenizer.bin").string() : tokenizer_path};
}

void check_inputs(const std::vector<std::string>& input_files, const ValSplit& val, const std::string& tokenizer_path) {
    if (input_files.empty()) throw Error("corpus: no input files given; expected one or more .txt or .txt.zst files");
    for (const std::string& p : input_files)
        if (!fs::is_regular_file(p)) throw Error("corpus: input '" + p + "' does not exist or is not a file");
    if (!tokenizer_path.empty() && !fs::is_regular_file(tokenizer_path))
        throw Error("corpus: tokenizer '" + tokenizer_path + "' does not exist");
    if (val.chunk_tokens == 0 && !(val.fraction >= 0.0 && val.fraction <= 0.5))
        throw Error("corpus: val_fraction must be between 0 and 0.5, got " + std::to_string(val.fraction));
    if (val.chunk_tokens > 0 && !(val.fraction > 0.0 && val.fraction <= 0.5))
        throw Error("corpus: a spread val split needs a val_fraction above 0 and at most 0.5, got " +
                    std::to_string(val.fraction));
}

// Moves val out of tokens (ValSplit in corpus.h) and returns it; train stays in tokens, in order.
std::vector<uint16_t> split_off_val(std::vector<uint16_t>& tokens, const ValSplit& split) {
    const uint64_t n = tokens.size();
    if (split.chunk_tokens == 0) {
        const auto wanted = static_cast<uint64_t>(std::ceil(split.fraction * static_cast<double>(n)));
        const uint64_t val_n = std::min(std::max(wanted, kMinValTokens), n / 2);
        std::vector<uint16_t> val(tokens.end() - static_cast<std::ptrdiff_t>(val_n), tokens.end());
        tokens.resize(n - val_n);
        return val;
    }
    const uint64_t chunk = split.chunk_tokens;
    const uint64_t chunks = (n + chunk - 1) / chunk;
    const double stride = std::round(1.0 / split.fraction);  // at least 2, as fraction <= 0.5
    if (stride > static_cast<double>(chunks)) {
        const auto one_in = static_cast<unsigned long long>(std::min(stride, 1e18));
        throw Error("corpus: a spread val split with val_fraction " + std::to_string(split.fraction) +
                    " takes one chunk in " + std::to_string(one_in) + ", but the inputs hold only " +
                    std::to_string(chunks) + " chunks of " + std::to_string(chunk) + " tokens (" + std::to_string(n) +
                    " tokens): use smaller chunks or a larger val_fraction");
    }
    const auto k = static_cast<uint64_t>(stride);
    std::vector<uint16_t> val;
    uint64_t kept = 0;
    for (uint64_t g = 0, off = 0; off < n; g++, off += chunk) {
        const auto first = tokens.begin() + static_cast<std::ptrdiff_t>(off);
        const auto last = first + static_cast<std::ptrdiff_t>(std::min(chunk, n - off));
        if (g % k == k - 1) {
            val.insert(val.end(), first, last);
        } else {
            if (kept != off) std::copy(first, last, tokens.begin() + static_cast<std::ptrdiff_t>(kept));  // moves left
            kept += static_cast<uint64_t>(last - first);
        }
    }
    tokens.resize(kept);
    return val;
}

Tokenizer train_tokenizer(const std::vector<std::string>& input_files, int vocab_size) {
    TokenizerTrainer trainer;
    for (const std::string& p : input_files) {
        log::get("data")->info("prepare: counting words in {}", p);
        read_text_pieces(p, [&](std::string_view text) { trainer.add_text(text); });
    }
    return trainer.train(vocab_size, [](int done, int total) {
        log::get("data")->info("prepare: training tokenizer: merges {}/{}", done, total);
    });
}

std::vector<uint16_t> encode_inputs(const std::vector<std::string>& input_files, const Tokenizer& tok) {
    std::vector<uint16_t> tokens;
    uint64_t bytes = 0, next_report = 0;
    for (const std::string& p : input_files) {
        tokens.push_back(static_cast<uint16_t>(tok.eot_token()));
        read_text_pieces(p, [&](std::string_view text) {
            for (int id : tok.encode(text)) tokens.push_back(static_cast<uint16_t>(id));
            bytes += text.size();
            if (bytes >= next_report) {
                log::get("data")->info("prepare: encoding: {:.1f} MB, {} tokens", bytes / 1e6, tokens.size());
                next_report = bytes + (16 << 20);
            }
        });
    }
    log::get("data")->info("prepare: encoded {:.1f} MB into {} tokens", bytes / 1e6, tokens.size());
    return tokens;
}

}  // namespace

PreparedCorpus prepare_corpus(const std::vector<std::string>& input_files, const std::string& out_dir,
                              int vocab_size, const ValSplit& val, const std::string& tokenizer_path) {
    check_inputs(input_files, val, tokenizer_path);
    const std::string done_text = manifest(input_files, vocab_size, val, tokenizer_path);
    std::error_code ec;
    fs::create_directories(out_dir, ec);
    if (ec) throw Error("corpus: cannot create output directory '" + out_dir + "': " + ec.message());
    clear_previous(out_dir);
    const PreparedCorpus result = corpus_paths(out_dir, tokenizer_path);

    Tokenizer tok = tokenizer_path.empty() ? train_tokenizer(input_files, vocab_size) : Tokenizer::load(tokenizer_path);
    if (!tok.can_encode())
        throw Error("corpus: tokenizer '" + tokenizer_path + "' can only decode (llm.c format); give an Archipelago tokenizer");
    if (tok.eot_token() < 0)
        throw Error("corpus: tokenizer '" + tokenizer_path + "' has no end-of-text token to separate documents with");
    if (tok.vocab_size() > 65536)
        throw Error("corpus: tokenizer has " + std::to_string(tok.vocab_size()) + " ids; shards hold uint16, at most 65536");
    if (tokenizer_path.empty()) tok.save(result.tokenizer_path);

    std::vector<uint16_t> tokens = encode_inputs(input_files, tok);
    if (tokens.size() < 2)
        throw Error("corpus: the inputs hold only " + std::to_string(tokens.size()) +
                    " tokens; expected enough text for a train and a val split");
    const std::vector<uint16_t> val_tokens = split_off_val(tokens, val);
    const size_t train_shards = write_shards(out_dir, "train", tokens);
    const size_t val_shards = write_shards(out_dir, "val", val_tokens);

    const std::string done = (fs::path(out_dir) / "DONE").string();
    write_file_atomic(done, std::span(reinterpret_cast<const uint8_t*>(done_text.data()), done_text.size()));
    log::get("data")->info("prepare: wrote {} train tokens in {} shard(s) and {} val tokens in {} shard(s) to {}",
                           tokens.size(), train_shards, val_tokens.size(), val_shards, out_dir);
    return result;
}

PreparedCorpus prepare_corpus(const std::vector<std::string>& input_files, const std::string& out_dir,
                              int vocab_size, double val_fraction, const std::string& tokenizer_path) {
    return prepare_corpus(input_files, out_dir, vocab_size, ValSplit{val_fraction, 0}, tokenizer_path);
}

PreparedCorpus ensure_bundled_corpus(const std::string& input, const std::string& out_dir) {
    if (!fs::is_regular_file(input))
        throw Error("corpus: the bundled corpus '" + input + "' is missing (data/make_kjv.sh regenerates it)");
    constexpr int kVocab = 4096;
    constexpr double kValFraction = 0.02;
    fs::create_directories(out_dir);
    const FileLock lock((fs::path(out_dir) / ".lock").string());  // islands starting together prepare once
    const std::string done = (fs::path(out_dir) / "DONE").string();
    const PreparedCorpus paths = corpus_paths(out_dir, "");
    if (fs::is_regular_file(done) && fs::is_regular_file(paths.tokenizer_path) &&
        read_small_file(done) == manifest({input}, kVocab, ValSplit{kValFraction, 0}, ""))
        return paths;
    return prepare_corpus({input}, out_dir, kVocab, kValFraction, "");
}

PreparedCorpus ensure_bundled_corpus() {
    return ensure_bundled_corpus(shipped_file("kjv.txt.zst"), (fs::path(user_data_dir()) / "corpus" / "kjv").string());
}

namespace {

constexpr int kBenchVocab = 4096;
constexpr ValSplit kBenchVal{1.0 / 64, 4096};  // every 64th chunk of 4096 tokens: 1.6% of the tokens

std::string command_line(const std::vector<std::string>& argv) {
    std::string s;
    for (const std::string& a : argv) s += (s.empty() ? "" : " ") + a;
    return s;
}

// Runs argv (looked up on PATH, no shell) and returns its exit status; with out, its stdout is read
// into *out, otherwise it is inherited. stderr is always inherited, so the program's messages show.
int run_program(const std::vector<std::string>& argv, std::string* out) {
    std::vector<char*> args;  // built before fork: the child only calls async-signal-safe functions
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    int fds[2] = {-1, -1};
    if (out && pipe2(fds, O_CLOEXEC) != 0)
        throw Error(std::string("corpus: cannot create a pipe: ") + std::strerror(errno));
    const pid_t pid = fork();
    if (pid < 0) {
        const int err = errno;
        if (out) {
            close(fds[0]);
            close(fds[1]);
        }
        throw Error(std::string("corpus: cannot start '") + argv[0] + "': " + std::strerror(err));
    }
    if (pid == 0) {
        if (out) {
            dup2(fds[1], STDOUT_FILENO);
            close(fds[0]);
            close(fds[1]);
        }
        execvp(args[0], args.data());
        _exit(127);
    }
    if (out) {
        close(fds[1]);
        char buf[4096];
        for (ssize_t got; (got = read(fds[0], buf, sizeof(buf))) != 0;) {
            if (got < 0 && errno == EINTR) continue;
            if (got < 0) break;
            out->append(buf, static_cast<size_t>(got));
        }
        close(fds[0]);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            throw Error(std::string("corpus: waiting for '") + argv[0] + "' failed: " + std::strerror(errno));
    if (!WIFEXITED(status)) return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return WEXITSTATUS(status);
}

void run_script(const std::vector<std::string>& argv, std::string* out) {
    const int rc = run_program(argv, out);
    if (rc == 127)
        throw Error("corpus: cannot run '" + argv[0] + "' to make the benchmark corpus; install python3 "
                    "(scripts/install_deps.sh does)");
    if (rc != 0)
        throw Error("corpus: `" + command_line(argv) + "` failed with exit status " + std::to_string(rc) +
                    " (its message is above)");
}

std::vector<std::string> text_documents(const fs::path& dir) {
    std::vector<std::string> files;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec))
        if (entry.is_regular_file() && entry.path().extension() == ".txt") files.push_back(entry.path().string());
    std::sort(files.begin(), files.end());
    return files;
}

}  // namespace

PreparedCorpus ensure_bench_corpus(const std::string& script, const std::string& out_dir,
                                   const std::string& package_root) {
    if (!fs::is_regular_file(script))
        throw Error("corpus: the benchmark corpus script '" + script + "' is missing (data/ of a checkout has it)");
    fs::create_directories(out_dir);
    const FileLock lock((fs::path(out_dir) / ".lock").string());  // islands starting together prepare once
    const fs::path text_dir = fs::path(out_dir) / "text";
    const std::string done = (fs::path(out_dir) / "DONE").string();
    const PreparedCorpus paths = corpus_paths(out_dir, "");
    const bool finished = fs::is_regular_file(done) && fs::is_regular_file(paths.tokenizer_path) &&
                          fs::is_regular_file(text_dir / "SOURCES");  // the script writes SOURCES last
    if (finished) {
        const std::vector<std::string> docs = text_documents(text_dir);
        if (!docs.empty() && read_small_file(done) == manifest(docs, kBenchVocab, kBenchVal, "")) return paths;
    }

    std::vector<std::string> base = {"python3", script};
    if (!package_root.empty()) base.insert(base.end(), {"--root", package_root});
    std::vector<std::string> check = base;
    check.push_back("--missing");
    std::string missing;
    run_script(check, &missing);
    std::istringstream lines(missing);
    std::string names;
    for (std::string p; std::getline(lines, p);)
        if (!p.empty()) names += (names.empty() ? "" : " ") + p;
    if (!names.empty())
        throw Error("corpus: the benchmark corpus is made from Debian packages that are not installed: " + names +
                    "; install them with `sudo apt-get install " + names + "` (scripts/install_deps.sh does)");

    log::get("data")->info("prepare: extracting the benchmark corpus into {}", text_dir.string());
    std::vector<std::string> extract = base;
    extract.push_back(text_dir.string());
    run_script(extract, nullptr);
    const std::vector<std::string> docs = text_documents(text_dir);
    if (docs.empty()) throw Error("corpus: " + script + " wrote no .txt documents into " + text_dir.string());
    return prepare_corpus(docs, out_dir, kBenchVocab, kBenchVal, "");
}

PreparedCorpus ensure_bench_corpus() {
    return ensure_bench_corpus(shipped_file("make_bench_corpus.py"),
                               (fs::path(user_data_dir()) / "corpus" / "bench").string());
}

}  // namespace arch
