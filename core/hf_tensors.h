// core/hf_tensors.h: every tensor of a Hugging Face checkpoint by name, from one safetensors file or
// from the shards a model.safetensors.index.json names (files in the folder only), each shard opened
// and validated (core/safetensors.h) once. It remembers what was read, so an importer can refuse the
// tensors a config does not describe. Knows no model: core/hf_import.h and hf_llama.h name the tensors.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/safetensors.h"

namespace arch {

class HfTensors {
public:
    // A folder: model.safetensors.index.json's shards, or model.safetensors.
    static HfTensors folder(const std::string& dir);
    // One safetensors file (a native Llama checkpoint).
    static HfTensors file(const std::string& path);

    bool has(const std::string& name) const { return where_.count(name) > 0; }
    // The tensor as fp32 after checking its shape; throws naming the tensor when it is missing.
    std::vector<float> read(const std::string& name, const std::vector<int64_t>& shape);
    // Throws naming the first tensor nobody read, except names ending in one of `ignored_suffixes`
    // (buffers transformers may save) or starting with one of `ignored_prefixes`.
    void check_all_used(const std::set<std::string>& ignored_suffixes,
                        const std::set<std::string>& ignored_prefixes = {}) const;
    const std::string& source() const { return source_; }  // the folder or file, for messages

private:
    explicit HfTensors(std::string source) : source_(std::move(source)) {}
    void add(const std::string& name, const std::string& file);
    SafetensorsFile& open(const std::string& file);
    std::string source_, dir_;
    std::map<std::string, std::string> where_;  // tensor -> file in dir_
    std::map<std::string, std::unique_ptr<SafetensorsFile>> files_;
    std::set<std::string> used_;
};

}  // namespace arch
