// core/param_layout.h: where each tensor of a model lives inside the one flat parameter buffer.
// Layer-major (ARCHITECTURE.md): block 0's tensors, block 1's, ..., then the globals. GPT-2: twelve
// tensors a block, then wte, wpe, ln_f. Llama: ln1w, qkvw, attprojw, ln2w, fcw, fcprojw a block (no
// biases; qkvw stacks q, k and v rows, fcw stacks the SwiGLU gate rows over the up rows), then wte,
// lm_head when untied, ln_f. Gradients, AdamW m and v, outer momentum and snapshots use this same
// layout. GPT-2 files use llm.c's order instead (all ln1w of every layer, then all ln1b, ...):
// for_each_in_llmc_order() maps the two.
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

// A tensor this model does not have (a Llama's biases, wpe, lnfb; lm_head when tied).
constexpr std::size_t kAbsent = static_cast<std::size_t>(-1);

// Offsets (in floats) of one block's tensors; kAbsent for the ones the family lacks.
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
    std::size_t wte() const { return wte_; }        // (Vp, C); the first float of the globals
    std::size_t wpe() const { return wpe_; }        // (maxT, C); kAbsent for Llama
    std::size_t lnfw() const { return lnfw_; }      // (C)
    std::size_t lnfb() const { return lnfb_; }      // (C); kAbsent for Llama
    std::size_t lm_head() const { return lm_head_; }  // (Vp, C); wte() when tied

    // Calls fn for every tensor in llm.c's checkpoint order (GPT-2 only; throws for Llama).
    void for_each_in_llmc_order(const std::function<void(const TensorView&)>& fn) const;

private:
    ModelConfig config_;
    std::vector<TensorView> tensors_;
    std::vector<BlockOffsets> blocks_;
    std::size_t block_size_ = 0, wte_ = 0, wpe_ = kAbsent, lnfw_ = 0, lnfb_ = kAbsent, lm_head_ = kAbsent, num_params_ = 0;
};

}  // namespace arch
