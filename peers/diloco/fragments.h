// peers/diloco/fragments.h: Streaming DiLoCo's fragments (arXiv 2501.18512): the model cut into P
// parts that are synchronised at staggered times, so only one part is on the wire at once. A
// fragment is a list of ranges of the flat parameter vector: the transformer blocks l with
// l mod P == p (strided, as in the paper), plus the p-th P-th of what follows the blocks (embeddings
// and final norm), so the P fragments are about equal in size. Fragment p of an island syncs after
// inner steps s with s mod H == offset(p), offset(p) = ((p + 1) H / P) mod H: the last fragment syncs
// at the end of each H steps, the others evenly before it.
#pragma once

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

namespace arch::diloco {

struct Fragment {
    std::vector<std::pair<std::size_t, std::size_t>> ranges;  // [begin, end) in floats, ascending
    std::size_t size = 0;                                     // floats in all ranges
};

// P fragments of a layer-major buffer of `blocks` blocks of block_size floats, then the tail up to
// num_params. P = 1 is the whole vector as one range. Throws arch::Error for P < 1 or P > blocks.
std::vector<Fragment> make_fragments(std::size_t blocks, std::size_t block_size, std::size_t num_params, int P);

// The inner step (1-based count of steps done) after which fragment p is sent: s >= 1 and
// s mod H == ((p + 1) * H / P) mod H.
bool fragment_due(int step, int p, int H, int P);

void gather(const Fragment& f, std::span<const float> full, std::span<float> out);   // out: f.size floats
void scatter(const Fragment& f, std::span<const float> in, std::span<float> full);   // in: f.size floats

}  // namespace arch::diloco
