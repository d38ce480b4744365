// core/text_inputs.h: a corpus's input files as a stream of documents, in constant memory.
// Inputs are files, folders (their corpus files, sorted) or globs. A file's format comes from its name:
// .txt (the whole file is one document), .jsonl or .json (one JSON object per line, the document in
// one string field), each optionally compressed as .zst or .gz. Documents arrive as pieces of text cut
// where the pre-splitter always cuts (pretoken_safe_prefix), so encoding pieces apart gives the tokens
// of encoding a document whole. A bad line (invalid JSON, a missing or non-string field, invalid
// UTF-8) is an arch::Error naming its file and line, or, with skip_bad_lines, dropped and counted.
// JSON is always UTF-8; a .txt file is checked only when check_text_utf8 (a byte-level tokenizer of
// our own takes any bytes; a Hugging Face tokenizer takes text).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace arch {

// The files the arguments name: a file as it is, a folder's files with a corpus extension (sorted;
// not recursive), a glob's matches (sorted). Throws arch::Error for an argument that names nothing,
// or for a file whose name is not one of the formats above.
std::vector<std::string> expand_inputs(const std::vector<std::string>& args);

// Whether a corpus file's name says JSON lines (.jsonl or .json, compressed or not).
bool is_json_lines(const std::string& path);

// Where the first byte of text that is not valid UTF-8 is (a sequence cut off by the end of text
// included), or std::string::npos.
size_t invalid_utf8_at(std::string_view text);

struct TextPiece {
    std::string text;
    uint64_t document = 0;   // index over all documents of all inputs, in order
    bool starts_document = false;
};

struct InputOptions {
    std::string text_field = "text";  // .jsonl / .json: the field holding the document
    bool skip_bad_lines = false;
    bool check_text_utf8 = true;      // .txt: refuse (or skip) lines that are not UTF-8
};

class DocumentReader {
public:
    DocumentReader(std::vector<std::string> files, InputOptions options);
    ~DocumentReader();
    // The next piece, or false at the end of the last input. Throws arch::Error for bad input.
    bool next(TextPiece& piece);
    uint64_t bytes_read() const;      // of the input files as stored (compressed or not), so far
    uint64_t bytes_total() const;     // of all input files as stored
    uint64_t text_bytes() const { return text_bytes_; }  // of text delivered so far
    uint64_t documents() const { return documents_; }
    uint64_t bad_lines() const { return bad_lines_; }

private:
    class Source;
    bool open_next_file();
    bool next_text_piece(TextPiece& piece);
    bool next_json_piece(TextPiece& piece);
    bool read_more();
    std::string checked_text(std::string text);
    void bad_line(uint64_t line, const std::string& why);

    std::vector<std::string> files_;
    InputOptions options_;
    size_t next_file_ = 0;
    std::unique_ptr<Source> source_;  // the open input
    bool json_ = false;
    uint64_t line_ = 0;               // of the open input, 1-based, the last line read
    std::string pending_;             // bytes read from the source and not yet delivered
    size_t line_at_ = 0;              // JSON lines: where in pending_ the next line starts
    bool source_done_ = false;
    bool text_started_ = false;       // a .txt document's first piece was delivered
    std::vector<std::string> cut_;    // a JSON line's long document cut into pieces, not yet delivered
    uint64_t bytes_before_ = 0;       // stored bytes of the files already closed
    uint64_t bytes_total_ = 0;
    uint64_t text_bytes_ = 0, documents_ = 0, bad_lines_ = 0;
};

}  // namespace arch
