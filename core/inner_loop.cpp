// core/inner_loop.cpp: the names of the inner optimizers (run.toml's inner.optimizer). InnerLoop
// itself is an interface: core/trainer.cpp and core/island.cpp implement it.
#include "core/inner_loop.h"

namespace arch {

const EnumNames<InnerOptimizer>& inner_optimizer_names() {
    static const EnumNames<InnerOptimizer> names{{"adamw", InnerOptimizer::adamw}, {"muon", InnerOptimizer::muon}};
    return names;
}

}  // namespace arch
