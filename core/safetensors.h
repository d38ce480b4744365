// core/safetensors.h: the safetensors format (8-byte little-endian header length, a JSON header
// naming each tensor's dtype, shape and data_offsets, then the data), read and written. Reading
// checks everything before any tensor is handed out: the header's length against the file, its
// JSON, every dtype (F32, F16, BF16), every shape against its byte range, and that the ranges lie in
// the data, in order, without overlap or gaps. The optional "__metadata__" (string to string) is kept.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace arch {

struct SafeTensor {
    std::string dtype;               // F32, F16 or BF16
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0;     // byte range in the data section
    uint64_t numel() const;
};

class SafetensorsFile {
public:
    explicit SafetensorsFile(const std::string& path);  // throws arch::Error naming the file and the problem
    const std::map<std::string, SafeTensor>& tensors() const { return tensors_; }
    bool has(const std::string& name) const { return tensors_.count(name) > 0; }
    // The tensor as fp32 (F16 and BF16 widened exactly), after checking its shape is `shape`.
    std::vector<float> read(const std::string& name, const std::vector<int64_t>& shape) const;
    const std::string& path() const { return path_; }
    // The header's "__metadata__" entries (non-string values, which the format does not allow, skipped).
    const std::map<std::string, std::string>& metadata() const { return metadata_; }

private:
    std::string path_;
    uint64_t data_offset_ = 0;
    std::map<std::string, SafeTensor> tensors_;
    std::map<std::string, std::string> metadata_;
};

// "[301, 64]", for messages.
std::string shape_text(const std::vector<int64_t>& shape);

struct SafeTensorOut {
    std::string name;
    std::vector<int> shape;
    std::vector<float> data;          // the values, held; or, when empty,
    std::span<const float> view = {};  // the values where they lie (they must outlive the write)
    std::span<const float> values() const { return data.empty() ? view : std::span<const float>(data); }
};
// Writes F32 tensors in the order given, atomically, each straight from its values: no copy of the file. "__metadata__" holds {"format": "pt"} (which
// transformers asks for) and then `metadata`.
void write_safetensors(const std::string& path, const std::vector<SafeTensorOut>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace arch
