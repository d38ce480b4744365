// core/memory_modes.cpp: the names of the memory-saving modes.
#include "core/memory_modes.h"

#include "core/error.h"

namespace arch {

Recompute parse_recompute(const std::string& name) {
    if (name == "none") return Recompute::none;
    if (name == "attention") return Recompute::attention;
    if (name == "block") return Recompute::block;
    throw Error("recompute '" + name + "' is not known (none, attention, block)");
}

Offload parse_offload(const std::string& name) {
    if (name == "none") return Offload::none;
    if (name == "optimizer") return Offload::optimizer;
    throw Error("offload '" + name + "' is not known (none, optimizer)");
}

const char* recompute_name(Recompute recompute) {
    switch (recompute) {
        case Recompute::none:
            return "none";
        case Recompute::attention:
            return "attention";
        case Recompute::block:
            return "block";
    }
    return "?";
}

const char* offload_name(Offload offload) {
    return offload == Offload::optimizer ? "optimizer" : "none";
}

}  // namespace arch
