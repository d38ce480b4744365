// core/hf_tensors.cpp: HfTensors (hf_tensors.h).
#include "core/hf_tensors.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"

namespace arch {

HfTensors HfTensors::folder(const std::string& dir) {
    HfTensors t(dir);
    t.dir_ = dir;
    const std::string index = dir + "/model.safetensors.index.json";
    if (file_exists(index)) {
        try {
            const nlohmann::json j = nlohmann::json::parse(read_text_file(index, 64u << 20));
            for (const auto& [name, file] : j.at("weight_map").items()) t.add(name, file.get<std::string>());
        } catch (const nlohmann::json::exception& e) {
            throw Error("'" + index + "' is malformed: " + e.what());
        }
    } else if (file_exists(dir + "/model.safetensors")) {
        for (const auto& [name, s] : t.open("model.safetensors").tensors()) t.where_[name] = "model.safetensors";
    } else {
        throw Error("'" + dir + "' holds neither model.safetensors nor model.safetensors.index.json");
    }
    return t;
}

HfTensors HfTensors::file(const std::string& path) {
    HfTensors t(path);
    const std::filesystem::path p(path);
    t.dir_ = p.has_parent_path() ? p.parent_path().string() : ".";
    const std::string name = p.filename().string();
    for (const auto& [tensor, s] : t.open(name).tensors()) t.where_[tensor] = name;
    return t;
}

std::vector<float> HfTensors::read(const std::string& name, const std::vector<int64_t>& shape) {
    const auto it = where_.find(name);
    if (it == where_.end()) throw Error("'" + source_ + "': the tensor '" + name + "' is missing");
    used_.insert(name);
    return open(it->second).read(name, shape);
}

void HfTensors::check_all_used(const std::set<std::string>& ignored_suffixes,
                               const std::set<std::string>& ignored_prefixes) const {
    for (const auto& [name, file] : where_) {
        if (used_.count(name)) continue;
        bool ignored = false;
        for (const std::string& s : ignored_suffixes)
            ignored = ignored || (name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0);
        for (const std::string& s : ignored_prefixes) ignored = ignored || name.rfind(s, 0) == 0;
        if (!ignored)
            throw Error("'" + source_ + "': the tensor '" + name + "' is not part of the model the config describes");
    }
}

void HfTensors::add(const std::string& name, const std::string& file) {
    if (file.empty() || file.find('/') != std::string::npos || file == "." || file == "..")
        throw Error("'" + dir_ + "/model.safetensors.index.json' names the shard '" + file + "': only files in the folder");
    where_[name] = file;
}

SafetensorsFile& HfTensors::open(const std::string& file) {
    auto& f = files_[file];
    if (!f) f = std::make_unique<SafetensorsFile>(dir_ + "/" + file);
    return *f;
}

}  // namespace arch
