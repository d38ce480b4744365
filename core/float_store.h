// core/float_store.h: a run of floats held in RAM, or in a memory-mapped file on this machine's own
// disk. In RAM they are a vector's, zeros that cost nothing until written (an anonymous mapping: the
// kernel gives each page as it is first touched), or a range of a byte buffer taken over as it is
// (a blob that came over the link, not copied again). A peer's θ replica (its round snapshot) can live in such a file (`archipelago peer
// --theta-on-disk`): after each pass over it the pages go back to the page cache (release()), so the
// kernel keeps them while RAM is free and writes them out and drops them when it is not, and a big
// model's replica costs disk, not RAM. The file is unlinked as soon as it is mapped: nothing is left
// behind, whatever way the process ends.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace arch {

class FloatStore {
public:
    FloatStore() = default;
    FloatStore(std::vector<float> values);  // in RAM (implicit: where a vector of floats is given, it is held)
    static FloatStore zeros(std::size_t n);  // n zeros in RAM, no page of them touched yet
    // The n floats at bytes[at...], `bytes` kept as it is. `at` must leave them aligned for float.
    static FloatStore within(std::vector<std::byte> bytes, std::size_t at, std::size_t n);
    // n floats, all zero, in a file created at path (its folder must exist; an existing file is
    // replaced), its blocks reserved. Throws arch::Error naming the path and the system's reason.
    static FloatStore on_disk(const std::string& path, std::size_t n);
    static FloatStore on_disk(const std::string& path, std::span<const float> values);  // holding a copy of values
    ~FloatStore();
    FloatStore(FloatStore&& other) noexcept;
    FloatStore& operator=(FloatStore&& other) noexcept;
    FloatStore(const FloatStore&) = delete;
    FloatStore& operator=(const FloatStore&) = delete;

    std::size_t size() const { return size_; }
    float* data() { return data_; }
    const float* data() const { return data_; }
    std::span<float> values() { return {data_, size_}; }
    std::span<const float> values() const { return {data_, size_}; }
    bool is_on_disk() const { return mapped_; }
    // On disk: the pages leave this process (the page cache keeps them while it can). In RAM: nothing.
    void release() const;

private:
    void reset() noexcept;

    std::vector<float> memory_;
    std::vector<std::byte> bytes_;  // within(): the buffer data_ points into
    float* data_ = nullptr;
    std::size_t size_ = 0;
    bool mapped_ = false;     // a file's mapping
    bool anonymous_ = false;  // zeros(): an anonymous mapping
};

}  // namespace arch
