// core/param_layout.cpp: builds the layer-major tensor table of ParamLayout.
#include "core/param_layout.h"

#include "core/error.h"

namespace arch {

namespace {
const char* kBlockNames[kBlockTensors] = {"ln1w", "ln1b",     "qkvw", "qkvb", "attprojw", "attprojb",
                                          "ln2w", "ln2b",     "fcw",  "fcb",  "fcprojw",  "fcprojb"};

// The shape of a block tensor, or an empty shape for one the family lacks.
std::vector<int> block_shape(BlockTensor t, const ModelConfig& config) {
    const int C = config.channels;
    if (config.family == ModelFamily::llama) {
        const int F = config.ffn_hidden;
        switch (t) {
            case BlockTensor::ln1w:
            case BlockTensor::ln2w: return {C};
            case BlockTensor::qkvw: return {qkv_channels(config), C};
            case BlockTensor::attprojw: return {C, C};
            case BlockTensor::fcw: return {2 * F, C};
            case BlockTensor::fcprojw: return {C, F};
            default: return {};  // no biases
        }
    }
    switch (t) {
        case BlockTensor::qkvw: return {3 * C, C};
        case BlockTensor::qkvb: return {3 * C};
        case BlockTensor::attprojw: return {C, C};
        case BlockTensor::fcw: return {4 * C, C};
        case BlockTensor::fcb: return {4 * C};
        case BlockTensor::fcprojw: return {C, 4 * C};
        default: return {C};  // ln1w, ln1b, attprojb, ln2w, ln2b, fcprojb
    }
}

std::size_t elements(const std::vector<int>& shape) {
    std::size_t n = 1;
    for (int d : shape) n *= static_cast<std::size_t>(d);
    return n;
}
}  // namespace

ParamLayout::ParamLayout(const ModelConfig& config) : config_(config) {
    const int C = config.channels;
    std::size_t offset = 0;
    auto add = [&](const std::string& name, std::vector<int> shape) {
        TensorView v;
        v.name = name;
        v.offset = offset;
        v.size = elements(shape);
        v.weight_decay = shape.size() >= 2;
        v.shape = std::move(shape);
        offset += v.size;
        tensors_.push_back(std::move(v));
        return tensors_.back().offset;
    };
    for (int l = 0; l < config.num_layers; ++l) {
        std::size_t o[kBlockTensors];
        for (int t = 0; t < kBlockTensors; ++t) {
            std::vector<int> shape = block_shape(BlockTensor(t), config);
            o[t] = shape.empty() ? kAbsent : add("h" + std::to_string(l) + "." + kBlockNames[t], std::move(shape));
        }
        blocks_.push_back({o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7], o[8], o[9], o[10], o[11]});
    }
    block_size_ = config.num_layers > 0 ? offset / config.num_layers : 0;
    wte_ = lm_head_ = add("wte", {config.padded_vocab_size, C});
    if (config.family == ModelFamily::llama) {
        if (!config.tied_embeddings) lm_head_ = add("lm_head", {config.padded_vocab_size, C});
        lnfw_ = add("lnfw", {C});
    } else {
        wpe_ = add("wpe", {config.max_seq_len, C});
        lnfw_ = add("lnfw", {C});
        lnfb_ = add("lnfb", {C});
    }
    num_params_ = offset;
}

std::size_t ParamLayout::block_begin(int layer) const { return blocks_[layer].ln1w; }

void ParamLayout::for_each_in_llmc_order(const std::function<void(const TensorView&)>& fn) const {
    if (config_.family != ModelFamily::gpt2)
        throw Error("llm.c's checkpoint order exists for GPT-2 only, not for a " + std::string(family_name(config_.family)) +
                    " model");
    const int L = config_.num_layers;
    const std::size_t globals = static_cast<std::size_t>(L) * kBlockTensors;
    fn(tensors_[globals + 0]);  // wte
    fn(tensors_[globals + 1]);  // wpe
    for (int t = 0; t < kBlockTensors; ++t)
        for (int l = 0; l < L; ++l) fn(tensors_[static_cast<std::size_t>(l) * kBlockTensors + t]);
    fn(tensors_[globals + 2]);  // lnfw
    fn(tensors_[globals + 3]);  // lnfb
}

}  // namespace arch
