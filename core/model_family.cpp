// core/model_family.cpp: the table of model families. A new family adds its registration (defined in
// its own file, as gpt2_family.cpp does) here, and nowhere else in core/.
#include "core/model_family.h"

#include "core/error.h"

namespace arch {

const ModelFamilySpec& gpt2_family();   // core/gpt2_family.cpp
const ModelFamilySpec& llama_family();  // core/llama_family.cpp

std::span<const ModelFamilySpec* const> model_families() {
    static const ModelFamilySpec* const all[] = {&gpt2_family(), &llama_family()};
    return all;
}

ModelConfig preset_shape(ModelFamily family, int T, int V, int L, int NH, int C) {
    ModelConfig c;
    c.family = family;
    c.max_seq_len = T;
    c.vocab_size = V;
    c.num_layers = L;
    c.num_heads = NH;
    c.channels = C;
    return c;
}

const ModelFamilySpec& family_spec(ModelFamily family) {
    for (const ModelFamilySpec* f : model_families())
        if (f->id == family) return *f;
    throw Error("model family " + std::to_string(static_cast<int>(family)) + " is not registered");
}

const ModelFamilySpec& family_spec(const std::string& name) {
    for (const ModelFamilySpec* f : model_families())
        if (name == f->name) return *f;
    throw Error("model family must be " + family_names() + ", got '" + name + "'");
}

std::string family_names() {
    std::string out;
    const std::size_t n = model_families().size();
    for (std::size_t i = 0; i < n; ++i) out += (i == 0 ? "" : i + 1 == n ? " or " : ", ") + std::string(model_families()[i]->name);
    return out;
}

}  // namespace arch
