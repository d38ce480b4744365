// core/param_layout.cpp: builds the layer-major tensor table of ParamLayout.
#include "core/param_layout.h"

#include "core/error.h"
#include "core/model_family.h"

namespace arch {

namespace {
const char* kBlockNames[kBlockTensors] = {"ln1w", "ln1b",     "qkvw", "qkvb", "attprojw", "attprojb",
                                          "ln2w", "ln2b",     "fcw",  "fcb",  "fcprojw",  "fcprojb"};
const char* kGlobalNames[] = {"wte", "wpe", "lm_head", "lnfw", "lnfb"};  // by GlobalTensor::Which

std::size_t elements(const std::vector<int>& shape) {
    std::size_t n = 1;
    for (int d : shape) n *= static_cast<std::size_t>(d);
    return n;
}
}  // namespace

ParamLayout::ParamLayout(const ModelConfig& config) : config_(config) {
    const ModelFamilySpec& family = family_spec(config.family);
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
            std::vector<int> shape = family.block_shape(BlockTensor(t), config);
            o[t] = shape.empty() ? kAbsent : add("h" + std::to_string(l) + "." + kBlockNames[t], std::move(shape));
        }
        blocks_.push_back({o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7], o[8], o[9], o[10], o[11]});
    }
    block_size_ = config.num_layers > 0 ? offset / config.num_layers : 0;
    std::size_t* const slot[] = {&wte_, &wpe_, &lm_head_, &lnfw_, &lnfb_};  // by GlobalTensor::Which
    for (GlobalTensor& g : family.global_tensors(config)) {
        const int which = static_cast<int>(g.which);
        *slot[which] = add(kGlobalNames[which], std::move(g.shape));
    }
    if (lm_head_ == kAbsent) lm_head_ = wte_;  // tied unless the family adds its own
    num_params_ = offset;
}

std::size_t ParamLayout::block_begin(int layer) const { return blocks_[layer].ln1w; }

void ParamLayout::for_each_in_llmc_order(const std::function<void(const TensorView&)>& fn) const {
    if (wpe_ == kAbsent || lnfb_ == kAbsent || lm_head_ != wte_)
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
