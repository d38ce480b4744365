// core/param_store.cpp: unit ranges and the FlatParamStore.
#include "core/param_store.h"

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

}  // namespace arch
