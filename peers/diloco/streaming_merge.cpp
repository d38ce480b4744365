// peers/diloco/streaming_merge.cpp: the streaming merge rules.
#include "peers/diloco/streaming_merge.h"

#include <algorithm>

namespace arch::diloco {

const EnumNames<StreamingMerge>& streaming_merge_names() {
    static const EnumNames<StreamingMerge> names{{"mix", StreamingMerge::mix}, {"carry", StreamingMerge::carry}};
    return names;
}

StreamingMerge parse_streaming_merge(const std::string& name) {
    return parse_named(streaming_merge_names(), name, "streaming merge");
}

void merge_fragment(StreamingMerge rule, float alpha, std::span<float> mine, std::span<const float> global,
                    std::span<const float> sent) {
    if (rule == StreamingMerge::mix) {
        for (std::size_t k = 0; k < mine.size(); ++k) mine[k] = alpha * mine[k] + (1.0f - alpha) * global[k];
    } else if (!sent.empty()) {
        for (std::size_t k = 0; k < mine.size(); ++k) mine[k] = global[k] + (mine[k] - sent[k]);
    } else {
        std::copy(global.begin(), global.end(), mine.begin());
    }
}

}  // namespace arch::diloco
