// core/transformer.cpp: the family-independent half of a Model on a Backend (buffers, AdamW, loss),
// and the factories, which the family's registration (core/model_family.h) provides.
#include "core/transformer.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "core/model_family.h"

namespace arch {

std::vector<float> init_params(const ModelConfig& config, uint64_t seed) {
    return family_spec(config.family).init_params(config, seed);
}

void check_batch(const ModelConfig& config, const int* inputs, const int* targets, int B, int T) {
    if (B <= 0 || T <= 0) throw Error("forward: batch B=" + std::to_string(B) + " and T=" + std::to_string(T) + " must be positive");
    if (T > config.max_seq_len)
        throw Error("sequence length T=" + std::to_string(T) + " exceeds the model's max T=" +
                    std::to_string(config.max_seq_len));
    const int N = B * T, V = config.vocab_size;
    auto check_ids = [&](const int* ids, const char* what) {
        for (int i = 0; i < N; ++i)
            if (ids[i] < 0 || ids[i] >= V)
                throw Error(std::string(what) + " token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                            " is outside the vocabulary [0, " + std::to_string(V) + ")");
    };
    check_ids(inputs, "input");
    if (targets != nullptr) check_ids(targets, "target");
}

Transformer::Transformer(const ModelConfig& config, Backend& backend, ParamStore* store)
    : config_(config), layout_((validate(config), config)), backend_(backend), store_(store) {
    if (store_ == nullptr) {
        own_store_ = std::make_unique<FlatParamStore>(layout_, backend_);
        store_ = own_store_.get();
    }
}

Transformer::Transformer(const ModelConfig& config, std::unique_ptr<Backend> backend)
    : config_(config), layout_((validate(config), config)), own_backend_(std::move(backend)), backend_(*own_backend_) {
    own_store_ = std::make_unique<FlatParamStore>(layout_, backend_);
    store_ = own_store_.get();
}

Transformer::~Transformer() {
    adamw_.reset();
    free_activations();
    own_store_.reset();  // before the backend it lives in
}

namespace {
FlatParamStore& flat(ParamStore* store) {
    auto* f = dynamic_cast<FlatParamStore*>(store);
    if (f == nullptr) throw Error("whole parameter buffers exist only with a FlatParamStore");
    return *f;
}
}  // namespace

float* Transformer::params() { return flat(store_).all_params(); }
float* Transformer::grads() { return flat(store_).all_grads(); }

AdamW& Transformer::adamw() {
    flat(store_);  // throws for a sharded store
    if (!adamw_) adamw_ = std::make_unique<AdamW>(layout_, backend_);
    return *adamw_;
}

float Transformer::adamw_step(float lr, const AdamWConfig& config) { return adamw().step(params(), grads(), lr, config); }

void Transformer::get_adamw_state(std::span<float> m, std::span<float> v) const {
    if (!adamw_) {  // no step taken yet: the state is zero
        if (m.size() != layout_.num_params() || v.size() != layout_.num_params())
            throw Error("get_adamw_state: wrong buffer size");
        std::fill(m.begin(), m.end(), 0.0f);
        std::fill(v.begin(), v.end(), 0.0f);
        return;
    }
    adamw_->get_state(m, v);
}

void Transformer::set_adamw_state(std::span<const float> m, std::span<const float> v, int steps) {
    adamw().set_state(m, v, steps);
}

DeviceMemory Transformer::memory() const {
    DeviceMemory m;
    m.params_bytes = m.grads_bytes = layout_.num_params() * sizeof(float);
    m.optimizer_bytes = 2 * m.params_bytes;
    m.activations_bytes = activation_bytes_;
    m.workspace_bytes = workspace_bytes_;
    return m;
}

void Transformer::init_weights(uint64_t seed) { set_params(init_params(config_, seed)); }

void Transformer::set_params(std::span<const float> host) {
    if (host.size() != layout_.num_params())
        throw Error("set_params: expected " + std::to_string(layout_.num_params()) + " floats, got " +
                    std::to_string(host.size()));
    backend_.upload(params(), host.data(), host.size_bytes());
}

void Transformer::get_params(std::span<float> host) {
    if (host.size() != layout_.num_params()) throw Error("get_params: wrong buffer size");
    backend_.download(host.data(), params(), host.size_bytes());
}

bool Transformer::read_slice(StateVector which, std::size_t offset, std::span<float> out) {
    if (offset > layout_.num_params() || out.size() > layout_.num_params() - offset)
        throw Error("read_slice: the slice runs past the parameters");
    auto* whole = dynamic_cast<FlatParamStore*>(store_);
    if (whole == nullptr) return false;  // a shard's store: the caller gathers the whole
    if (which == StateVector::params)
        backend_.download(out.data(), whole->all_params() + offset, out.size_bytes());
    else if (adamw_)
        adamw_->get_state_slice(which, offset, out);
    else  // no step taken yet: the state is zero
        std::fill(out.begin(), out.end(), 0.0f);
    return true;
}

bool Transformer::write_moments_slice(std::size_t offset, std::span<const float> m, std::span<const float> v) {
    if (dynamic_cast<FlatParamStore*>(store_) == nullptr) return false;
    adamw().set_state_slice(offset, m, v);
    return true;
}

void Transformer::get_grads(std::span<float> host) {
    if (host.size() != layout_.num_params()) throw Error("get_grads: wrong buffer size");
    backend_.download(host.data(), grads(), host.size_bytes());
}

float* Transformer::alloc_floats(std::size_t n) {
    void* p = backend_.alloc(n * sizeof(float));
    owned_.push_back(p);
    activation_bytes_ += n * sizeof(float);
    return static_cast<float*>(p);
}

float* Transformer::alloc_scratch(std::size_t n) {
    float* p = alloc_floats(n);
    activation_bytes_ -= n * sizeof(float);
    workspace_bytes_ += n * sizeof(float);
    return p;
}

std::vector<float*> Transformer::alloc_per_layer(std::size_t n, bool shared) {
    std::vector<float*> v(config_.num_layers);
    for (std::size_t l = 0; l < v.size(); ++l) v[l] = shared && l > 0 ? v[0] : alloc_floats(n);
    return v;
}

void Transformer::set_recompute(Recompute recompute) {
    if (recompute == recompute_) return;
    recompute_ = recompute;
    free_activations();  // the next batch allocates for the new mode
    B_ = T_ = 0;
    have_targets_ = logits_valid_ = false;
}

void Transformer::alloc_io(std::size_t N) {
    for (int** ids : {&inputs_, &targets_}) {
        *ids = static_cast<int*>(backend_.alloc(N * sizeof(int)));
        owned_.push_back(*ids);
        activation_bytes_ += N * sizeof(int);
    }
    logits_ = alloc_floats(N * config_.padded_vocab_size);
    losses_ = alloc_floats(N);
}

void Transformer::free_activations() {
    for (void* p : owned_) backend_.free(p);
    owned_.clear();
    activation_bytes_ = workspace_bytes_ = 0;
    inputs_ = targets_ = nullptr;
    logits_ = losses_ = nullptr;
    logits_valid_ = false;
}

void Transformer::begin_forward(const int* inputs, const int* targets, int B, int T) {
    check_batch(config_, inputs, targets, B, T);
    ensure_activations(B, T);
    B_ = B;
    T_ = T;
    const std::size_t N = static_cast<std::size_t>(B) * T;
    backend_.upload(inputs_, inputs, N * sizeof(int));
    if (targets != nullptr) backend_.upload(targets_, targets, N * sizeof(int));
    have_targets_ = targets != nullptr;
}

float Transformer::finish_forward() {
    logits_valid_ = true;
    if (!have_targets_) return 0.0f;
    const int N = B_ * T_;
    backend_.crossentropy_forward(losses_, logits_, targets_, N, config_.vocab_size, config_.padded_vocab_size);
    std::vector<float> host(N);
    backend_.download(host.data(), losses_, N * sizeof(float));
    double sum = 0.0;
    for (float x : host) sum += x;
    return static_cast<float>(sum / N);
}

void Transformer::begin_backward(float loss_scale) {
    if (!have_targets_ || !logits_valid_) throw Error("backward: needs a forward pass with targets first");
    const int N = B_ * T_;
    backend_.crossentropy_backward(logits_, targets_, loss_scale / N, N, config_.vocab_size,
                                   config_.padded_vocab_size);  // logits -> dlogits
    logits_valid_ = false;
    have_targets_ = false;
}

std::vector<float> Transformer::logits_at(int b, int t) const {
    if (!logits_valid_ || b < 0 || b >= B_ || t < 0 || t >= T_) throw Error("logits_at: no logits for that position");
    std::vector<float> row(config_.vocab_size);
    const std::size_t offset = (static_cast<std::size_t>(b) * T_ + t) * config_.padded_vocab_size;
    backend_.download(row.data(), logits_ + offset, row.size() * sizeof(float));
    return row;
}

std::unique_ptr<Transformer> make_transformer(const ModelConfig& config, Backend& backend, ParamStore* store) {
    return family_spec(config.family).make_on(config, backend, store);
}

std::unique_ptr<Transformer> make_transformer(const ModelConfig& config, std::unique_ptr<Backend> backend) {
    return family_spec(config.family).make_owning(config, std::move(backend));
}

}  // namespace arch
