// net/transfer.cpp: TransferSender and TransferReceiver state machines.
#include "net/transfer.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "net/message.h"

namespace arch::net {
namespace {

std::string id_text(uint64_t id) {
    return std::to_string(id);
}

TransferStep rejected(std::string reason) {
    TransferStep step;
    step.rejected = std::move(reason);
    return step;
}

}  // namespace

std::vector<std::span<const std::byte>> Outbound::pieces() const {
    std::vector<std::span<const std::byte>> out{payload};
    out.insert(out.end(), data.begin(), data.end());
    return out;
}

std::vector<std::byte> Outbound::joined() const {
    std::vector<std::byte> out(payload);
    append_pieces(out, data);
    return out;
}

// ---- sender ----

TransferSender::TransferSender(uint64_t transfer_id, std::vector<std::byte> blob,
                               uint32_t chunk_bytes, uint32_t tag)
    : TransferSender(transfer_id, std::make_shared<const std::vector<std::byte>>(std::move(blob)), chunk_bytes, tag) {}

TransferSender::TransferSender(uint64_t transfer_id, std::shared_ptr<const std::vector<std::byte>> blob,
                               uint32_t chunk_bytes, uint32_t tag)
    : TransferSender(transfer_id, std::span<const std::byte>(*blob), blob, chunk_bytes, tag) {}

TransferSender::TransferSender(uint64_t transfer_id, std::span<const std::byte> blob,
                               std::shared_ptr<const void> owner, uint32_t chunk_bytes, uint32_t tag)
    : TransferSender(transfer_id, blob, std::move(owner), chunk_bytes, tag, checksum(blob)) {}

TransferSender::TransferSender(uint64_t transfer_id, std::span<const std::byte> blob,
                               std::shared_ptr<const void> owner, uint32_t chunk_bytes, uint32_t tag,
                               const Digest& digest)
    : TransferSender(transfer_id, std::vector<std::span<const std::byte>>{blob}, std::move(owner), chunk_bytes, tag,
                     digest) {}

TransferSender::TransferSender(uint64_t transfer_id, std::vector<std::span<const std::byte>> pieces,
                               std::shared_ptr<const void> owner, uint32_t chunk_bytes, uint32_t tag,
                               const Digest& digest)
    : owner_(std::move(owner)), pieces_(std::move(pieces)) {
    std::erase_if(pieces_, [](std::span<const std::byte> piece) { return piece.empty(); });
    size_ = bytes_of(pieces_);
    if (chunk_bytes == 0) throw Error("transfer chunk size must be positive");
    const uint64_t count = (size_ + chunk_bytes - 1) / chunk_bytes;
    if (count > 0xfffffff0ull)
        throw Error("transfer of " + std::to_string(size_) + " bytes needs too many chunks");
    begin_.id = transfer_id;
    begin_.total_bytes = size_;
    begin_.chunk_bytes = chunk_bytes;
    begin_.chunk_count = static_cast<uint32_t>(count);
    begin_.tag = tag;
    begin_.digest = digest;
}

Outbound TransferSender::begin() {
    awaiting_status_ = true;
    return Outbound{kTransferBegin, encode(begin_)};
}

Outbound TransferSender::abort(const std::string& reason) {
    error_ = "aborted by sender: " + reason;
    return Outbound{kTransferAbort, encode(AbortMsg{begin_.id, reason})};
}

TransferStep TransferSender::on_message(uint16_t type, std::span<const std::byte> payload) {
    std::string error;
    const auto id = peek_transfer_id(payload);
    if (id && *id != begin_.id)
        return rejected(type_name(type) + " for transfer " + id_text(*id) + ", this sender has " +
                        id_text(begin_.id));
    TransferStep step;
    switch (type) {
        case kTransferStatus: {
            // Only in answer to a begin: an unasked status would restart the session, and with it
            // a window of chunks, for the price of a few bytes.
            if (!awaiting_status_) return rejected("transfer-status that answers no transfer-begin");
            auto m = decode_status(payload, error, begin_.chunk_count);
            if (!m) return rejected(error);
            if (m->held.size() != begin_.chunk_count)
                return rejected("transfer-status lists " + std::to_string(m->held.size()) +
                                " chunks, transfer has " + std::to_string(begin_.chunk_count));
            awaiting_status_ = false;
            session_ = m->session;
            have_session_ = true;
            credit_ = std::min({m->credit, kMaxWindowChunks, begin_.chunk_count});
            in_flight_ = 0;
            session_credits_ = 0;
            held_ = std::move(m->held);
            reported_held_ = static_cast<uint64_t>(std::count(held_.begin(), held_.end(), true));
            cursor_ = 0;
            resend_.clear();
            if (reported_held_ == begin_.chunk_count) done_ = true;
            break;
        }
        case kTransferCredit: {
            auto m = decode_credit(payload, error);
            if (!m) return rejected(error);
            if (!have_session_ || m->session != session_)
                return step;  // from before a reconnect: ignore
            // A credit stands for a chunk of this session that reached the receiver: more than are
            // in flight would buy chunks nobody asked for.
            if (m->grant > in_flight_)
                return rejected("transfer-credit of " + std::to_string(m->grant) + " for " +
                                std::to_string(in_flight_) + " chunks in flight");
            credits_received_ += m->grant;
            session_credits_ += m->grant;
            in_flight_ -= m->grant;
            credit_ += m->grant;
            if (m->resend < begin_.chunk_count && !held_[m->resend] && m->resend < cursor_ &&
                std::find(resend_.begin(), resend_.end(), m->resend) == resend_.end())
                resend_.push_back(m->resend);  // a chunk sent before, once in the queue
            break;
        }
        case kTransferDone: {
            if (!decode_done(payload, error)) return rejected(error);
            done_ = true;
            break;
        }
        case kTransferAbort: {
            auto m = decode_abort(payload, error);
            if (!m) return rejected(error);
            error_ = "receiver aborted transfer " + id_text(begin_.id) + ": " + m->reason;
            break;
        }
        default:
            return rejected("unexpected " + type_name(type) + " for a transfer sender");
    }
    if (!done_ && error_.empty()) step.replies = pump();
    return step;
}

uint64_t TransferSender::bytes_acknowledged() const {
    if (done_) return size_;
    return std::min<uint64_t>((reported_held_ + session_credits_) * begin_.chunk_bytes, size_);
}

std::vector<Outbound> TransferSender::pump() {
    std::vector<Outbound> out;
    while (credit_ > 0) {
        uint32_t index;
        if (!resend_.empty()) {
            index = resend_.front();
            resend_.erase(resend_.begin());
        } else {
            while (cursor_ < begin_.chunk_count && held_[cursor_]) ++cursor_;
            if (cursor_ >= begin_.chunk_count) break;
            index = cursor_++;
        }
        const uint64_t offset = uint64_t{index} * begin_.chunk_bytes;
        const uint64_t length = std::min<uint64_t>(begin_.chunk_bytes, size_ - offset);
        std::vector<std::span<const std::byte>> data = pieces_of(offset, length);
        std::vector<std::byte> prefix = encode_chunk_prefix(begin_.id, session_, index, data);
        out.push_back(Outbound{kTransferChunk, std::move(prefix), std::move(data)});
        --credit_;
        ++in_flight_;
        ++chunks_sent_;
    }
    return out;
}

std::vector<std::span<const std::byte>> TransferSender::pieces_of(uint64_t offset, uint64_t length) const {
    std::vector<std::span<const std::byte>> out;
    for (const std::span<const std::byte> piece : pieces_) {
        if (length == 0) break;
        if (offset >= piece.size()) {
            offset -= piece.size();
            continue;
        }
        const uint64_t take = std::min<uint64_t>(length, piece.size() - offset);
        out.push_back(piece.subspan(offset, take));
        offset = 0;
        length -= take;
    }
    return out;
}

// ---- receiver ----

TransferReceiver::TransferReceiver(ReceiverLimits limits, uint64_t expected_id)
    : limits_(limits), expected_id_(expected_id) {
    if (limits_.window_chunks == 0) throw Error("transfer window must be at least one chunk");
}

void TransferReceiver::reset() {
    active_ = false;
    complete_ = false;
    begin_ = BeginMsg{};
    held_.clear();
    chunks_held_ = 0;
    bytes_held_ = 0;
    bad_chunks_ = 0;
    data_.clear();
    data_.shrink_to_fit();
    extent_ = 0;
    digest_.reset();
    digested_ = 0;
}

std::vector<std::byte> TransferReceiver::take() {
    if (!complete_) throw Error("transfer " + id_text(begin_.id) + " is not complete");
    std::vector<std::byte> blob = std::move(data_);
    blob.resize(begin_.total_bytes);  // only ever smaller: memory given may be larger than the blob
    reset();
    return blob;
}

bool TransferReceiver::use_memory(std::vector<std::byte>& spare) {
    if (!active_ || complete_ || chunks_held_ != 0 || spare.capacity() < begin_.total_bytes) return false;
    data_ = std::move(spare);
    spare = {};
    if (data_.size() > begin_.total_bytes) data_.resize(begin_.total_bytes);
    return true;
}

Outbound TransferReceiver::status() const {
    return Outbound{kTransferStatus,
                    encode(StatusMsg{begin_.id, session_, limits_.window_chunks, held_})};
}

Outbound TransferReceiver::credit(uint32_t resend) const {
    return Outbound{kTransferCredit, encode(CreditMsg{begin_.id, session_, 1, resend})};
}

TransferStep TransferReceiver::on_message(uint16_t type, std::span<const std::byte> payload) {
    switch (type) {
        case kTransferBegin:
            return on_begin(payload);
        case kTransferChunk:
            return on_chunk(payload);
        case kTransferAbort: {
            std::string error;
            const auto m = decode_abort(payload, error);
            if (!m) return rejected(error);
            if (!active_ || m->id != begin_.id)
                return rejected("transfer-abort for unknown transfer " + id_text(m->id));
            reset();
            return {};
        }
        default:
            return rejected("unexpected " + type_name(type) + " for a transfer receiver");
    }
}

TransferStep TransferReceiver::on_begin(std::span<const std::byte> payload) {
    std::string error;
    const auto m = decode_begin(payload, error);
    if (!m) return rejected(error);
    const std::string what = "transfer-begin " + id_text(m->id) + ": ";
    if (expected_id_ != 0 && m->id != expected_id_)
        return rejected(what + "expected transfer " + id_text(expected_id_));
    if (m->chunk_bytes == 0 || m->chunk_bytes > limits_.max_chunk_bytes)
        return rejected(what + "chunk size " + std::to_string(m->chunk_bytes) + " outside 1.." +
                        std::to_string(limits_.max_chunk_bytes));
    if (m->total_bytes > limits_.max_total_bytes)
        return rejected(what + std::to_string(m->total_bytes) + " bytes exceeds the limit of " +
                        std::to_string(limits_.max_total_bytes));
    const uint64_t count = (m->total_bytes + m->chunk_bytes - 1) / m->chunk_bytes;
    if (count > limits_.max_chunk_count)
        return rejected(what + std::to_string(count) + " chunks, at most " + std::to_string(limits_.max_chunk_count));
    if (count != m->chunk_count)
        return rejected(what + "chunk count " + std::to_string(m->chunk_count) +
                        " does not match " + std::to_string(m->total_bytes) +
                        " bytes in chunks of " + std::to_string(m->chunk_bytes));
    if (active_ && m->id != begin_.id)
        return rejected(what + "transfer " + id_text(begin_.id) + " is " +
                        (complete_ ? "complete but not taken" : "in progress"));
    if (active_ && (m->total_bytes != begin_.total_bytes || m->chunk_bytes != begin_.chunk_bytes ||
                    m->tag != begin_.tag || m->digest != begin_.digest))
        return rejected(what + "re-announced with a different size, chunking, tag or digest");
    if (!active_) {
        begin_ = *m;
        data_.clear();
        // Address space only: pages are touched as chunks fill them. An eighth more, so that the memory
        // can take a later blob of its kind a little larger (use_memory).
        data_.reserve(m->total_bytes + m->total_bytes / 8);
        extent_ = 0;
        held_.assign(m->chunk_count, false);
        chunks_held_ = 0;
        bytes_held_ = 0;
        bad_chunks_ = 0;
        digest_ = std::make_unique<DigestStream>();
        digested_ = 0;
        active_ = true;
        complete_ = m->chunk_count == 0 && checksum(std::span<const std::byte>()) == m->digest;
    }
    ++session_;
    TransferStep step;
    step.replies.push_back(status());
    if (complete_) step.replies.push_back(Outbound{kTransferDone, encode_done(begin_.id)});
    return step;
}

TransferStep TransferReceiver::bad_chunk(uint32_t resend, std::string reason,
                                         bool current_session) {
    TransferStep step;
    if (++bad_chunks_ > limits_.max_bad_chunks) {
        step.replies.push_back(
            Outbound{kTransferAbort, encode(AbortMsg{begin_.id, "too many bad chunks"})});
        step.rejected = reason + "; more than " + std::to_string(limits_.max_bad_chunks) +
                        " bad chunks, transfer " + id_text(begin_.id) + " aborted";
        reset();
        return step;
    }
    if (current_session) step.replies.push_back(credit(resend));
    step.rejected = std::move(reason);
    return step;
}

TransferStep TransferReceiver::on_chunk(std::span<const std::byte> payload) {
    std::string error;
    const auto c = decode_chunk(payload, error);
    if (!c) return rejected(error);
    if (!active_ || c->id != begin_.id)
        return rejected("transfer-chunk for unknown transfer " + id_text(c->id));
    if (complete_)
        return rejected("transfer-chunk " + std::to_string(c->index) + " after transfer " +
                        id_text(c->id) + " completed");
    const bool current = c->session == session_;
    const std::string what = "transfer " + id_text(c->id) + " chunk " + std::to_string(c->index);
    if (c->index >= begin_.chunk_count)
        return bad_chunk(kNoResend,
                         what + ": index out of range (transfer has " +
                             std::to_string(begin_.chunk_count) + " chunks)",
                         current);
    const uint64_t offset = uint64_t{c->index} * begin_.chunk_bytes;
    const uint64_t expected = std::min<uint64_t>(begin_.chunk_bytes, begin_.total_bytes - offset);
    if (c->data.size() != expected)
        return bad_chunk(c->index,
                         what + ": " + std::to_string(c->data.size()) + " bytes, expected " +
                             std::to_string(expected),
                         current);
    // An honest sender never has more chunks out, unheld, than its window and the chunks it must
    // send again: memory beyond the bytes held and those would be paid for by nobody.
    const uint64_t spare = uint64_t{limits_.window_chunks + limits_.max_bad_chunks} * begin_.chunk_bytes;
    if (std::max<uint64_t>(extent_, offset + expected) > bytes_held_ + expected + spare)
        return bad_chunk(kNoResend, what + ": further ahead of the chunks held than the window", current);
    if (held_[c->index]) {
        TransferStep step = rejected(what + ": duplicate");
        if (current) step.replies.push_back(credit(kNoResend));
        return step;
    }
    if (checksum(c->data) != c->checksum)
        return bad_chunk(c->index, what + ": checksum mismatch", current);

    // Within the reserve: no move. Memory given with use_memory is written over where it already holds
    // bytes (stale ones, never read), not zeroed first.
    if (offset + expected > data_.size()) data_.resize(offset + expected);
    extent_ = std::max<uint64_t>(extent_, offset + expected);
    std::memcpy(data_.data() + offset, c->data.data(), c->data.size());
    held_[c->index] = true;
    ++chunks_held_;
    bytes_held_ += c->data.size();
    for (; digested_ < begin_.chunk_count && held_[digested_]; ++digested_) {
        const uint64_t at = uint64_t{digested_} * begin_.chunk_bytes;
        digest_->add(std::span<const std::byte>(data_).subspan(at, std::min<uint64_t>(begin_.chunk_bytes, begin_.total_bytes - at)));
    }
    TransferStep step;
    if (current) step.replies.push_back(credit(kNoResend));
    if (chunks_held_ == begin_.chunk_count) {
        if (digest_->digest() == begin_.digest) {
            complete_ = true;
            step.replies.push_back(Outbound{kTransferDone, encode_done(begin_.id)});
        } else {
            step.replies.push_back(
                Outbound{kTransferAbort, encode(AbortMsg{begin_.id, "blob digest mismatch"})});
            step.rejected = "transfer " + id_text(begin_.id) +
                            ": every chunk verified but the blob digest does not match; aborted";
            reset();
        }
    }
    return step;
}

}  // namespace arch::net
