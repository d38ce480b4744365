// core/corpus.cpp: prepare_corpus: documents (text_inputs) -> tokenizer -> encoding on every core, in
// input order -> train/val shards (corpus_splits), resumable at every finished shard.
// ensure_bench_corpus runs data/make_bench_corpus.py (fork + exec, no shell) to get its documents.
#include "core/corpus.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string_view>
#include <thread>

#include "core/clock.h"
#include "core/corpus_splits.h"
#include "core/encoding_pool.h"
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
constexpr const char* kManifestHeader = "archipelago prepared corpus v1\n";
constexpr size_t kBatchBytes = 1 << 20;  // text handed to an encoding thread at a time
constexpr double kProgressSeconds = 2.0;

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

// What decides the output: the inputs' names, sizes and contents, and the settings. (Settings at
// their earlier defaults write no line, so preparations made before they existed still match.)
std::string manifest(const std::vector<std::string>& inputs, int vocab_size, const ValSplit& val,
                     const std::string& tokenizer_path, const InputOptions& input = {},
                     uint64_t shard_tokens = kMaxShardTokens) {
    std::ostringstream m;
    m << kManifestHeader << "vocab_size " << vocab_size << "\nval_fraction " << val.fraction << "\n";
    if (val.chunk_tokens > 0 && !val.by_document) m << "val_chunk_tokens " << val.chunk_tokens << "\n";
    if (val.by_document) m << "val_split documents seed " << val.seed << "\n";
    if (std::ranges::any_of(inputs, is_json_lines)) m << "text_field " << input.text_field << "\n";
    if (input.skip_bad_lines) m << "skip_bad_lines\n";
    if (shard_tokens != kMaxShardTokens) m << "shard_tokens " << shard_tokens << "\n";
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

// Removes what an earlier (maybe interrupted) preparation left, so old shards never match a glob.
void clear_previous(const std::string& out_dir, bool tokenizer_too) {
    std::error_code ec;
    fs::remove(fs::path(out_dir) / "DONE", ec);
    fs::remove(fs::path(out_dir) / "PROGRESS", ec);
    if (tokenizer_too) fs::remove(fs::path(out_dir) / "tokenizer.bin", ec);
    for (const auto& entry : fs::directory_iterator(out_dir)) {
        const std::string name = entry.path().filename().string();
        const bool shard = (name.starts_with("train_") || name.starts_with("val_")) &&
                           (name.ends_with(".bin") || name.ends_with(".bin.tmp"));
        if (shard) fs::remove(entry.path());
    }
}

PreparedCorpus corpus_paths(const std::string& out_dir, const std::string& tokenizer_path) {
    return {(fs::path(out_dir) / "train_*.bin").string(), (fs::path(out_dir) / "val_*.bin").string(),
            tokenizer_path.empty() ? (fs::path(out_dir) / "tokenizer.bin").string() : tokenizer_path};
}

void check_settings(const PrepareOptions& o) {
    const ValSplit& val = o.val;
    if (!o.tokenizer_path.empty() && !fs::is_regular_file(o.tokenizer_path))
        throw Error("corpus: tokenizer '" + o.tokenizer_path + "' does not exist");
    if (!val.by_document && val.chunk_tokens == 0 && !(val.fraction >= 0.0 && val.fraction <= 0.5))
        throw Error("corpus: val_fraction must be between 0 and 0.5, got " + std::to_string(val.fraction));
    if ((val.by_document || val.chunk_tokens > 0) && !(val.fraction > 0.0 && val.fraction <= 0.5))
        throw Error(std::string("corpus: a ") + (val.by_document ? "split by documents" : "spread val split") +
                    " needs a val_fraction above 0 and at most 0.5, got " + std::to_string(val.fraction));
    if (o.input.text_field.empty()) throw Error("corpus: --text-field must name a field");
}

// ---- resuming ------------------------------------------------------------------------------------

// out_dir/PROGRESS: the manifest, then where the token stream stands after `pieces` pieces.
struct Progress {
    uint64_t pieces = 0;
    SplitterState splits;
};

void write_progress(const std::string& out_dir, const std::string& manifest_text, const Progress& p) {
    std::ostringstream s;
    s << manifest_text << "resume " << p.pieces << " " << p.splits.stream_tokens;
    for (const ShardSequenceState* st : {&p.splits.train, &p.splits.val})
        s << " " << st->finished << " " << st->open_tokens << " " << st->tokens;
    s << "\n";
    write_text_file_atomic((fs::path(out_dir) / "PROGRESS").string(), s.str());
}

// The progress an interrupted preparation of the same manifest left, if any.
std::optional<Progress> read_progress(const std::string& out_dir, const std::string& manifest_text) {
    const std::string text = read_small_file((fs::path(out_dir) / "PROGRESS").string());
    if (!text.starts_with(manifest_text)) return std::nullopt;
    std::istringstream in(text.substr(manifest_text.size()));
    std::string word;
    Progress p;
    in >> word >> p.pieces >> p.splits.stream_tokens;
    for (ShardSequenceState* st : {&p.splits.train, &p.splits.val}) in >> st->finished >> st->open_tokens >> st->tokens;
    if (!in || word != "resume") return std::nullopt;
    return p;
}

// ---- the tokenizer -------------------------------------------------------------------------------

Tokenizer train_tokenizer(const std::vector<std::string>& inputs, const InputOptions& input, int vocab_size) {
    TokenizerTrainer trainer;
    InputOptions bytes = input;
    bytes.check_text_utf8 = false;  // ours is byte-level
    DocumentReader reader(inputs, bytes);
    log::get("data")->info("prepare: counting words in {} input file(s)", inputs.size());
    for (TextPiece piece; reader.next(piece);) trainer.add_text(piece.text);
    return trainer.train(vocab_size, [](int done, int total) {
        log::get("data")->info("prepare: training tokenizer: merges {}/{}", done, total);
    });
}

// ---- encoding on every core, in input order (core/encoding_pool.h) --------------------------------

// One line every kProgressSeconds: what was read of the inputs (as stored: the ETA comes from it), the
// text it held and its rate, tokens written.
class ProgressLine {
public:
    explicit ProgressLine(const DocumentReader& reader) : reader_(reader), start_(Clock::real().now()) {}
    void maybe(uint64_t tokens, bool last = false) {
        const double s = std::chrono::duration<double>(Clock::real().now() - start_).count();
        if (!last && s < next_) return;
        next_ = s + kProgressSeconds;
        const double read = static_cast<double>(reader_.bytes_read()), total = static_cast<double>(reader_.bytes_total());
        const double text = static_cast<double>(reader_.text_bytes());
        char eta[32] = "";
        if (!last && read > 0) std::snprintf(eta, sizeof(eta), ", ETA %.0f s", s * (total - read) / read);
        log::get("data")->info("prepare: {:.1f} of {:.1f} MB read ({:.0f}%), {:.1f} MB of text at {:.1f} MB/s, {} tokens "
                               "written{}",
                               read / 1e6, total / 1e6, total > 0 ? 100 * read / total : 100.0, text / 1e6,
                               s > 0 ? text / 1e6 / s : 0.0, tokens, eta);
    }

private:
    const DocumentReader& reader_;
    Clock::time_point start_;
    double next_ = kProgressSeconds;
};

int encoding_threads(int asked) {
    if (asked > 0) return asked;
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

// Reads, encodes and splits every piece after the first progress.pieces (those were done before an
// interruption), saving the progress whenever a shard is finished.
void encode_corpus(DocumentReader& reader, const Tokenizer& tok, CorpusSplitter& splits, Progress progress,
                   const PrepareOptions& o, const std::string& manifest_text) {
    const int threads = encoding_threads(o.threads);
    EncodingPool pool(tok, threads);
    std::deque<std::shared_ptr<TextBatch>> in_flight;  // in input order
    ProgressLine line(reader);
    uint64_t skip = progress.pieces;
    bool more = true;
    for (;;) {
        while (more && in_flight.size() < 2 * static_cast<size_t>(threads)) {
            auto b = std::make_shared<TextBatch>();
            size_t bytes = 0;
            for (TextPiece piece; bytes < kBatchBytes && (more = reader.next(piece));) {
                if (skip > 0) {
                    --skip;
                    continue;
                }
                bytes += piece.text.size() + 1;
                b->pieces.push_back(std::move(piece));
            }
            if (b->pieces.empty()) break;
            pool.submit(b);
            in_flight.push_back(std::move(b));
        }
        if (in_flight.empty()) break;
        const std::shared_ptr<TextBatch> b = std::move(in_flight.front());
        in_flight.pop_front();
        pool.wait(*b);
        for (size_t i = 0; i < b->pieces.size(); ++i) {
            const bool finished = splits.add(b->pieces[i].document, b->tokens[i]);
            ++progress.pieces;
            if (finished) {
                progress.splits = splits.state();
                write_progress(o.out_dir, manifest_text, progress);
                if (o.on_shard) o.on_shard(splits.train_shards() + splits.val_shards());
            }
        }
        line.maybe(splits.train_tokens() + splits.val_tokens());
    }
    line.maybe(splits.train_tokens() + splits.val_tokens(), true);
}

PreparedCorpus prepare_in(const PrepareOptions& o, const std::vector<std::string>& inputs, const std::string& manifest_text) {
    const PreparedCorpus result = corpus_paths(o.out_dir, o.tokenizer_path);
    std::optional<Progress> resume = read_progress(o.out_dir, manifest_text);
    if (resume && o.tokenizer_path.empty() && !fs::is_regular_file(result.tokenizer_path)) resume.reset();
    if (resume) {
        log::get("data")->info("prepare: resuming an interrupted preparation in {}: {} train and {} val shard(s) kept",
                               o.out_dir, resume->splits.train.finished, resume->splits.val.finished);
    } else {
        clear_previous(o.out_dir, o.tokenizer_path.empty());
    }

    Tokenizer tok = !o.tokenizer_path.empty() ? Tokenizer::load(o.tokenizer_path)
                    : resume                  ? Tokenizer::load(result.tokenizer_path)
                                              : train_tokenizer(inputs, o.input, o.vocab_size);
    if (!tok.can_encode())
        throw Error("corpus: tokenizer '" + o.tokenizer_path + "' can only decode (llm.c format); give an Archipelago tokenizer");
    if (tok.document_separator() < 0)
        throw Error("corpus: tokenizer '" + o.tokenizer_path + "' has no end-of-text or begin-of-text token to separate documents with");
    const int token_bytes = token_bytes_for_vocab(tok.vocab_size());
    if (o.tokenizer_path.empty() && !resume) tok.save(result.tokenizer_path);

    InputOptions input = o.input;
    input.check_text_utf8 = tok.is_hugging_face();
    DocumentReader reader(inputs, input);
    CorpusSplitter splits(o.out_dir, token_bytes, o.val, o.shard_tokens, resume ? resume->splits : SplitterState{});
    log::get("data")->info("prepare: encoding {} input file(s) ({:.1f} MB) on {} thread(s) into uint{} shards",
                           inputs.size(), static_cast<double>(reader.bytes_total()) / 1e6, encoding_threads(o.threads),
                           8 * token_bytes);
    encode_corpus(reader, tok, splits, resume.value_or(Progress{}), o, manifest_text);
    fs::remove(fs::path(o.out_dir) / "PROGRESS");  // a tail split rewrites train shards: no resuming past here
    splits.finish(reader.documents());

    write_text_file_atomic((fs::path(o.out_dir) / "DONE").string(), manifest_text);
    if (reader.bad_lines() > 0)
        log::get("data")->warn("prepare: skipped {} bad line(s) (--skip-bad-lines)", reader.bad_lines());
    log::get("data")->info("prepare: wrote {} train tokens in {} shard(s) and {} val tokens in {} shard(s) of uint{} "
                           "from {} document(s) to {}",
                           splits.train_tokens(), splits.train_shards(), splits.val_tokens(), splits.val_shards(),
                           8 * token_bytes, reader.documents(), o.out_dir);
    return result;
}

}  // namespace

PreparedCorpus prepare_corpus(const PrepareOptions& o) {
    check_settings(o);
    const std::vector<std::string> inputs = expand_inputs(o.inputs);
    const std::string manifest_text = manifest(inputs, o.vocab_size, o.val, o.tokenizer_path, o.input, o.shard_tokens);
    std::error_code ec;
    fs::create_directories(o.out_dir, ec);
    if (ec) throw Error("corpus: cannot create output directory '" + o.out_dir + "': " + ec.message());
    const PreparedCorpus paths = corpus_paths(o.out_dir, o.tokenizer_path);
    if (read_small_file((fs::path(o.out_dir) / "DONE").string()) == manifest_text && fs::is_regular_file(paths.tokenizer_path)) {
        log::get("data")->info("prepare: {} already holds this preparation (same inputs and settings)", o.out_dir);
        return paths;
    }
    try {
        return prepare_in(o, inputs, manifest_text);
    } catch (const Error&) {
        clear_previous(o.out_dir, o.tokenizer_path.empty());  // nothing half-written stays
        throw;
    }
}

PreparedCorpus prepare_corpus(const std::vector<std::string>& input_files, const std::string& out_dir,
                              int vocab_size, const ValSplit& val, const std::string& tokenizer_path) {
    PrepareOptions o;
    o.inputs = input_files;
    o.out_dir = out_dir;
    o.vocab_size = vocab_size;
    o.tokenizer_path = tokenizer_path;
    o.val = val;
    return prepare_corpus(o);
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
