// core/run_state.cpp: run-state file write (atomic) and validated read.
#include "core/run_state.h"

#include <sodium.h>

#include <cstring>

#include "core/bytes.h"
#include "core/error.h"
#include "core/file_io.h"

namespace arch {

namespace {
constexpr char kMagic[8] = {'A', 'R', 'C', 'H', 'R', 'U', 'N', '1'};
constexpr uint32_t kVersion = 1;
constexpr std::size_t kFixedBytes = 8 + 4 + 4 + 8 + 8 + 8 + 32;
constexpr std::size_t kHashBytes = 32;

}  // namespace

void write_run_state(const std::string& path, const RunState& s) {
    if (s.m.size() != s.v.size()) throw Error("write_run_state: m and v differ in size");
    if (sodium_init() < 0) throw Error("libsodium failed to initialise");
    ByteWriter w;
    w.reserve(kFixedBytes + 2 * s.m.size() * sizeof(float));
    w.raw(std::as_bytes(std::span(kMagic)));
    w.u32(kVersion);
    w.i32(static_cast<int32_t>(s.step));
    w.u64(s.m.size());
    w.u64(s.train_cursor.shard);
    w.u64(s.train_cursor.position);
    for (uint64_t x : s.train_cursor.rng_state) w.u64(x);
    w.raw(std::as_bytes(std::span(s.m)));
    w.raw(std::as_bytes(std::span(s.v)));
    const std::vector<std::byte> body = w.take();
    unsigned char hash[kHashBytes];
    crypto_generichash(hash, kHashBytes, reinterpret_cast<const unsigned char*>(body.data()), body.size(), nullptr, 0);
    const std::span<const std::byte> parts[] = {body, std::as_bytes(std::span(hash))};
    write_file_atomic(path, parts);
}

RunState read_run_state(const std::string& path, std::size_t expected_params) {
    if (sodium_init() < 0) throw Error("libsodium failed to initialise");
    const std::vector<std::byte> bytes = read_file(path);
    const std::size_t expected_size = kFixedBytes + 2 * expected_params * sizeof(float) + kHashBytes;
    if (bytes.size() < 8 || std::memcmp(bytes.data(), kMagic, 8) != 0)
        throw Error("'" + path + "' is not an Archipelago run-state file (bad magic)");
    if (bytes.size() != expected_size)
        throw Error("run state '" + path + "' is " + (bytes.size() < expected_size ? "truncated" : "too long") +
                    ": expected " + std::to_string(expected_size) + " bytes for " + std::to_string(expected_params) +
                    " params, file holds " + std::to_string(bytes.size()));
    unsigned char hash[kHashBytes];
    crypto_generichash(hash, kHashBytes, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size() - kHashBytes,
                       nullptr, 0);
    if (std::memcmp(hash, bytes.data() + bytes.size() - kHashBytes, kHashBytes) != 0)
        throw Error("run state '" + path + "' is corrupt: checksum mismatch");
    ByteReader r(std::span<const std::byte>(bytes).first(bytes.size() - kHashBytes).subspan(8), path.c_str());
    const uint32_t version = r.u32();
    if (version != kVersion) throw Error("run state '" + path + "' has version " + std::to_string(version) + ", expected 1");
    RunState s;
    s.step = r.i32();
    const uint64_t n = r.u64();
    if (n != expected_params || s.step < 0)
        throw Error("run state '" + path + "' is for " + std::to_string(n) + " params, the model has " +
                    std::to_string(expected_params));
    s.train_cursor.shard = r.u64();
    s.train_cursor.position = r.u64();
    for (uint64_t& x : s.train_cursor.rng_state) x = r.u64();
    for (std::vector<float>* a : {&s.m, &s.v}) {
        const std::span<const std::byte> b = r.raw(n * sizeof(float));
        a->resize(n);
        std::memcpy(a->data(), b.data(), b.size());
    }
    r.finish();
    return s;
}

}  // namespace arch
