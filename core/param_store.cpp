// core/param_store.cpp: unit ranges, the FlatParamStore and the ViewParamStore.
#include "core/param_store.h"

#include <string>

#include "core/error.h"

namespace arch {

int num_units(const ParamLayout& layout) { return static_cast<int>(layout.num_blocks()) + 1; }

std::size_t unit_begin(const ParamLayout& layout, int unit) {
    return unit < static_cast<int>(layout.num_blocks()) ? layout.block_begin(unit) : layout.wte();
}

std::size_t unit_size(const ParamLayout& layout, int unit) {
    return unit < static_cast<int>(layout.num_blocks()) ? layout.block_size() : layout.num_params() - layout.wte();
}

FlatParamStore::FlatParamStore(const ParamLayout& layout, Backend& backend) : layout_(layout), backend_(backend) {
    params_ = static_cast<float*>(backend_.alloc(layout.num_params() * sizeof(float)));
    grads_ = static_cast<float*>(backend_.alloc(layout.num_params() * sizeof(float)));
}

FlatParamStore::~FlatParamStore() {
    backend_.free(params_);
    backend_.free(grads_);
}

void ViewParamStore::view(std::span<const float> params) {
    if (params.size() != layout_.num_params())
        throw Error("a parameter view of " + std::to_string(params.size()) + " floats for a model of " +
                    std::to_string(layout_.num_params()));
    params_ = params;
}

const float* ViewParamStore::params(int unit) {
    if (params_.empty()) throw Error("a forward pass before the parameter view points at any parameters");
    return params_.data() + unit_begin(layout_, unit);
}

float* ViewParamStore::grads(int) {
    throw Error("a backward pass on parameters viewed in place (a forward-only model)");
}

}  // namespace arch
