// peers/diloco/fragments.cpp: make_fragments, fragment_due, gather and scatter.
#include "peers/diloco/fragments.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"

namespace arch::diloco {

std::vector<Fragment> make_fragments(std::size_t blocks, std::size_t block_size, std::size_t num_params, int P) {
    if (P < 1 || (P > 1 && static_cast<std::size_t>(P) > blocks))
        throw Error("streaming needs 1 to " + std::to_string(blocks) + " fragments (one block each at least), got " +
                    std::to_string(P));
    const std::size_t tail_begin = blocks * block_size;
    if (num_params < tail_begin) throw Error("the blocks hold more floats than the model");
    std::vector<Fragment> out(static_cast<std::size_t>(P));
    if (P == 1) {
        out[0].ranges = {{0, num_params}};
        out[0].size = num_params;
        return out;
    }
    const std::size_t tail = num_params - tail_begin;
    for (int p = 0; p < P; ++p) {
        Fragment& f = out[static_cast<std::size_t>(p)];
        for (std::size_t l = static_cast<std::size_t>(p); l < blocks; l += static_cast<std::size_t>(P))
            f.ranges.emplace_back(l * block_size, (l + 1) * block_size);
        const std::size_t a = tail_begin + tail * static_cast<std::size_t>(p) / static_cast<std::size_t>(P);
        const std::size_t b = tail_begin + tail * static_cast<std::size_t>(p + 1) / static_cast<std::size_t>(P);
        if (b > a) f.ranges.emplace_back(a, b);
        for (const auto& [begin, end] : f.ranges) f.size += end - begin;
    }
    return out;
}

bool fragment_due(int step, int p, int H, int P) {
    if (step < 1 || H < 1 || P < 1) return false;
    return step % H == ((p + 1) * H / P) % H;
}

void gather(const Fragment& f, std::span<const float> full, std::span<float> out) {
    if (out.size() != f.size) throw Error("gather: " + std::to_string(out.size()) + " floats for a fragment of " + std::to_string(f.size));
    std::size_t at = 0;
    for (const auto& [begin, end] : f.ranges) {
        if (end > full.size()) throw Error("gather: fragment past the end of the parameters");
        std::memcpy(out.data() + at, full.data() + begin, (end - begin) * sizeof(float));
        at += end - begin;
    }
}

void scatter(const Fragment& f, std::span<const float> in, std::span<float> full) {
    if (in.size() != f.size) throw Error("scatter: " + std::to_string(in.size()) + " floats for a fragment of " + std::to_string(f.size));
    std::size_t at = 0;
    for (const auto& [begin, end] : f.ranges) {
        if (end > full.size()) throw Error("scatter: fragment past the end of the parameters");
        std::memcpy(full.data() + begin, in.data() + at, (end - begin) * sizeof(float));
        at += end - begin;
    }
}

}  // namespace arch::diloco
