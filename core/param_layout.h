// core/param_layout.h: where each GPT-2 tensor lives inside the one flat parameter buffer.
// Layer-major (ARCHITECTURE.md): block 0's twelve tensors, block 1's, ..., then wte, wpe, ln_f.
// Gradients, AdamW m and v, outer momentum and snapshots use this same layout. Files use llm.c's
// order instead (all ln1w of every layer, then all ln1b, ...): for_each_in_llmc_order() maps the two.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/model_config.h"

namespace arch {

// The twelve tensors of one transformer block, in buffer order. Linear weights are (out, in).
enum class BlockTensor { ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb };
constexpr int kBlockTensors = 12;

struct TensorView {
    std::string name;        // llm.c-style name with layer: "h3.qkvw", "wte"
    std::size_t offset = 0;  // in floats, from the start of the flat buffer
    std::size_t size = 0;    // in floats
    std::vector<int> shape;  // row-major
    bool weight_decay = false;  // 2-D tensors (matmul weights, embeddings) decay; biases and norms do not
};

// Offsets (in floats) of one block's tensors.
struct BlockOffsets {
    std::size_t ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb;
};

class ParamLayout {
public:
    explicit ParamLayout(const ModelConfig& config);

    std::size_t num_params() const { return num_params_; }
    std::size_t num_blocks() const { return blocks_.size(); }
    const std::vector<TensorView>& tensors() const { return tensors_; }  // buffer order
    const BlockOffsets& block(int layer) const { return blocks_[layer]; }
    std::size_t block_begin(int layer) const;  // first float of a block; blocks are contiguous
    std::size_t block_size() const { return block_size_; }
    std::size_t wte() const { return wte_; }    // (Vp, C)
    std::size_t wpe() const { return wpe_; }    // (maxT, C)
    std::size_t lnfw() const { return lnfw_; }  // (C)
    std::size_t lnfb() const { return lnfb_; }  // (C)

    // Calls fn for every tensor in llm.c's checkpoint order.
    void for_each_in_llmc_order(const std::function<void(const TensorView&)>& fn) const;

private:
    ModelConfig config_;
    std::vector<TensorView> tensors_;
    std::vector<BlockOffsets> blocks_;
    std::size_t block_size_ = 0, wte_ = 0, wpe_ = 0, lnfw_ = 0, lnfb_ = 0, num_params_ = 0;
};

}  // namespace arch
