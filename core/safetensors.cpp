// core/safetensors.cpp: SafetensorsFile and write_safetensors (safetensors.h).
#include "core/safetensors.h"

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/bytes.h"
#include "core/error.h"
#include "core/file_io.h"

namespace arch {
namespace {

constexpr uint64_t kMaxHeader = 100u << 20;  // the format's own limit

uint64_t dtype_bytes(const std::string& dtype) {
    if (dtype == "F32") return 4;
    if (dtype == "F16" || dtype == "BF16") return 2;
    return 0;
}

float half_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1F, mant = h & 0x3FF, bits;
    if (exp == 0x1F) {
        bits = sign | 0x7F800000u | (mant << 13);
    } else if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else {  // subnormal: normalise
            int e = -1;
            do {
                ++e;
                mant <<= 1;
            } while ((mant & 0x400) == 0);
            bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3FF) << 13);
        }
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

}  // namespace

std::string shape_text(const std::vector<int64_t>& s) {
    std::string o = "[";
    for (std::size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
    return o + "]";
}

uint64_t SafeTensor::numel() const {
    uint64_t n = 1;
    for (int64_t d : shape) n *= static_cast<uint64_t>(d);
    return n;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
    const std::string where = "safetensors file '" + path + "'";
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) throw Error("cannot open " + where);
    const uint64_t size = static_cast<uint64_t>(in.tellg());
    std::byte length[8];
    in.seekg(0);
    if (size < 8 || !in.read(reinterpret_cast<char*>(length), 8)) throw Error(where + " is truncated: no header length");
    const uint64_t header = load_le<uint64_t>(length);
    if (header > kMaxHeader || header > size - 8)
        throw Error(where + " is truncated or corrupt: the header says " + std::to_string(header) + " bytes, the file has " +
                    std::to_string(size));
    std::string text(header, '\0');
    in.read(text.data(), static_cast<std::streamsize>(header));
    data_offset_ = 8 + header;
    const uint64_t data = size - data_offset_;
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        throw Error(where + ": the header is not valid JSON: " + e.what());
    }
    if (!j.is_object()) throw Error(where + ": the header is not a JSON object");
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (const auto& [name, t] : j.items()) {
        if (name == "__metadata__") {
            if (!t.is_object()) throw Error(where + ": __metadata__ is not a JSON object");
            for (const auto& [key, value] : t.items())
                if (value.is_string()) metadata_[key] = value.get<std::string>();
            continue;
        }
        const std::string what = where + ": tensor '" + name + "'";
        try {
            SafeTensor s;
            s.dtype = t.at("dtype").get<std::string>();
            if (dtype_bytes(s.dtype) == 0) throw Error(what + " has dtype " + s.dtype + " (expected F32, F16 or BF16)");
            for (const auto& d : t.at("shape")) {
                const int64_t v = d.get<int64_t>();
                if (v < 0 || v > (int64_t{1} << 40)) throw Error(what + " has an impossible shape");
                s.shape.push_back(v);
            }
            s.begin = t.at("data_offsets").at(0).get<uint64_t>();
            s.end = t.at("data_offsets").at(1).get<uint64_t>();
            if (s.begin > s.end || s.end > data)
                throw Error(what + ": data_offsets [" + std::to_string(s.begin) + ", " + std::to_string(s.end) +
                            ") lie outside the " + std::to_string(data) + " bytes of data (truncated?)");
            if (s.end - s.begin != s.numel() * dtype_bytes(s.dtype))
                throw Error(what + ": " + std::to_string(s.end - s.begin) + " bytes for a " + s.dtype + " tensor of " +
                            std::to_string(s.numel()) + " values");
            ranges.emplace_back(s.begin, s.end);
            tensors_.emplace(name, std::move(s));
        } catch (const nlohmann::json::exception& e) {
            throw Error(what + " is malformed: " + e.what());
        }
    }
    std::sort(ranges.begin(), ranges.end());
    uint64_t at = 0;
    for (const auto& [b, e] : ranges) {
        if (b != at) throw Error(where + ": the tensors' data " + (b < at ? "overlaps" : "has a gap") + " at byte " + std::to_string(b));
        at = e;
    }
    if (at != data) throw Error(where + ": " + std::to_string(data - at) + " bytes after the last tensor");
}

std::vector<float> SafetensorsFile::read(const std::string& name, const std::vector<int64_t>& shape) const {
    const auto it = tensors_.find(name);
    if (it == tensors_.end()) throw Error("safetensors file '" + path_ + "' has no tensor '" + name + "'");
    const SafeTensor& t = it->second;
    if (t.shape != shape)
        throw Error("safetensors file '" + path_ + "': tensor '" + name + "' has shape " + shape_text(t.shape) +
                    ", expected " + shape_text(shape));
    std::ifstream in(path_, std::ios::binary);
    std::vector<std::byte> raw(t.end - t.begin);
    in.seekg(static_cast<std::streamoff>(data_offset_ + t.begin));
    if (!in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size())))
        throw Error("safetensors file '" + path_ + "': cannot read tensor '" + name + "' (changed on disk?)");
    std::vector<float> out(t.numel());
    for (std::size_t i = 0; i < out.size(); ++i) {
        if (t.dtype == "F32") {
            out[i] = load_le<float>(raw.data() + 4 * i);
        } else {
            const uint16_t h = load_le<uint16_t>(raw.data() + 2 * i);
            if (t.dtype == "F16") {
                out[i] = half_to_float(h);
            } else {
                const uint32_t bits = static_cast<uint32_t>(h) << 16;
                std::memcpy(&out[i], &bits, 4);
            }
        }
    }
    return out;
}

void write_safetensors(const std::string& path, const std::vector<SafeTensorOut>& tensors,
                       const std::map<std::string, std::string>& metadata) {
    nlohmann::ordered_json index = {{"__metadata__", {{"format", "pt"}}}};
    for (const auto& [key, value] : metadata) index["__metadata__"][key] = value;
    std::size_t offset = 0;
    for (const SafeTensorOut& e : tensors) {
        std::size_t numel = 1;
        for (int d : e.shape) numel *= static_cast<std::size_t>(d);
        if (numel != e.values().size())
            throw Error("write_safetensors: tensor '" + e.name + "' has " + std::to_string(e.values().size()) +
                        " values for its shape of " + std::to_string(numel));
        const std::size_t bytes = e.values().size() * sizeof(float);
        index[e.name] = {{"dtype", "F32"}, {"shape", e.shape}, {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    std::string header = index.dump();
    while (header.size() % 8 != 0) header += ' ';
    ByteWriter head;
    head.u64(header.size());
    head.raw(byte_view(header));
    const std::vector<std::byte> head_bytes = head.take();
    std::vector<std::span<const std::byte>> parts = {head_bytes};
    for (const SafeTensorOut& e : tensors)
        parts.push_back(std::as_bytes(e.values()));
    write_file_atomic(path, parts);
}

}  // namespace arch
