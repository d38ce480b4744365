// core/run_state.cpp: run-state file write (atomic) and validated read.
#include "core/run_state.h"

#include <sodium.h>

#include <cstring>

#include "core/error.h"
#include "core/file_io.h"

namespace arch {

namespace {
constexpr char kMagic[8] = {'A', 'R', 'C', 'H', 'R', 'U', 'N', '1'};
constexpr uint32_t kVersion = 1;
constexpr std::size_t kFixedBytes = 8 + 4 + 4 + 8 + 8 + 8 + 32;
constexpr std::size_t kHashBytes = 32;

template <class T>
void put(std::vector<uint8_t>& out, const T& value) {
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    out.insert(out.end(), p, p + sizeof(T));
}
template <class T>
T get(const uint8_t*& p) {
    T value;
    std::memcpy(&value, p, sizeof(T));
    p += sizeof(T);
    return value;
}
}  // namespace

void write_run_state(const std::string& path, const RunState& s) {
    if (s.m.size() != s.v.size()) throw Error("write_run_state: m and v differ in size");
    if (sodium_init() < 0) throw Error("libsodium failed to initialise");
    std::vector<uint8_t> out;
    out.reserve(kFixedBytes + 2 * s.m.size() * sizeof(float) + kHashBytes);
    out.insert(out.end(), kMagic, kMagic + 8);
    put(out, kVersion);
    put(out, static_cast<int32_t>(s.step));
    put(out, static_cast<uint64_t>(s.m.size()));
    put(out, s.train_cursor.shard);
    put(out, s.train_cursor.position);
    for (uint64_t x : s.train_cursor.rng_state) put(out, x);
    const auto* m = reinterpret_cast<const uint8_t*>(s.m.data());
    const auto* v = reinterpret_cast<const uint8_t*>(s.v.data());
    out.insert(out.end(), m, m + s.m.size() * sizeof(float));
    out.insert(out.end(), v, v + s.v.size() * sizeof(float));
    uint8_t hash[kHashBytes];
    crypto_generichash(hash, kHashBytes, out.data(), out.size(), nullptr, 0);
    out.insert(out.end(), hash, hash + kHashBytes);
    write_file_atomic(path, out);
}

RunState read_run_state(const std::string& path, std::size_t expected_params) {
    if (sodium_init() < 0) throw Error("libsodium failed to initialise");
    const std::vector<uint8_t> bytes = read_file(path);
    const std::size_t expected_size = kFixedBytes + 2 * expected_params * sizeof(float) + kHashBytes;
    if (bytes.size() < 8 || std::memcmp(bytes.data(), kMagic, 8) != 0)
        throw Error("'" + path + "' is not an Archipelago run-state file (bad magic)");
    if (bytes.size() != expected_size)
        throw Error("run state '" + path + "' is " + (bytes.size() < expected_size ? "truncated" : "too long") +
                    ": expected " + std::to_string(expected_size) + " bytes for " + std::to_string(expected_params) +
                    " params, file holds " + std::to_string(bytes.size()));
    uint8_t hash[kHashBytes];
    crypto_generichash(hash, kHashBytes, bytes.data(), bytes.size() - kHashBytes, nullptr, 0);
    if (std::memcmp(hash, bytes.data() + bytes.size() - kHashBytes, kHashBytes) != 0)
        throw Error("run state '" + path + "' is corrupt: checksum mismatch");
    const uint8_t* p = bytes.data() + 8;
    const uint32_t version = get<uint32_t>(p);
    if (version != kVersion) throw Error("run state '" + path + "' has version " + std::to_string(version) + ", expected 1");
    RunState s;
    s.step = get<int32_t>(p);
    const uint64_t n = get<uint64_t>(p);
    if (n != expected_params || s.step < 0)
        throw Error("run state '" + path + "' is for " + std::to_string(n) + " params, the model has " +
                    std::to_string(expected_params));
    s.train_cursor.shard = get<uint64_t>(p);
    s.train_cursor.position = get<uint64_t>(p);
    for (uint64_t& x : s.train_cursor.rng_state) x = get<uint64_t>(p);
    s.m.resize(n);
    s.v.resize(n);
    std::memcpy(s.m.data(), p, n * sizeof(float));
    p += n * sizeof(float);
    std::memcpy(s.v.data(), p, n * sizeof(float));
    return s;
}

}  // namespace arch
