// gui/daemon_types.cpp: JSON -> structs for the control API's replies (QJsonDocument).
// Lenient on purpose: a daemon newer than the app may add fields, and numbers may arrive as
// doubles or integers; only a body that is not the expected object/array is refused.
#include "gui/daemon_types.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace arch::gui {
namespace {

std::optional<QJsonObject> object_of(const QByteArray& json) {
    QJsonParseError err{};
    const QJsonDocument doc = QJsonDocument::fromJson(json, &err);
    if (err.error != QJsonParseError::NoError || !doc.isObject()) return std::nullopt;
    return doc.object();
}

std::optional<QJsonArray> array_field(const QByteArray& json, const char* key) {
    const auto o = object_of(json);
    if (!o || !o->value(key).isArray()) return std::nullopt;
    return o->value(key).toArray();
}

int int_of(const QJsonObject& o, const char* key, int fallback = 0) {
    return o.value(key).isDouble() ? static_cast<int>(o.value(key).toDouble()) : fallback;
}

}  // namespace

std::optional<DaemonStatus> parse_status(const QByteArray& json) {
    const auto o = object_of(json);
    if (!o) return std::nullopt;
    DaemonStatus s;
    s.role = o->value("role").toString("idle");
    s.run = o->value("run").toString();
    s.state = o->value("state").toString();
    s.round = int_of(*o, "round");
    s.rounds = int_of(*o, "rounds");
    s.mode = o->value("mode").toString();
    s.islands = int_of(*o, "islands");
    s.theta_hash = o->value("theta_hash").toString();
    s.paused = o->value("paused").toBool();
    s.tokens_per_s = o->value("tokens_per_s").toDouble();
    s.uptime_s = o->value("uptime_s").toDouble();
    s.steps_per_round = int_of(*o, "steps_per_round");
    s.steps_why = o->value("steps_why").toString();
    s.reachability = o->value("reachability").toString("off");
    s.external_endpoint = o->value("external_endpoint").toString();
    s.reachability_detail = o->value("reachability_detail").toString();
    const QJsonObject privacy = o->value("privacy").toObject();
    s.privacy_mode = privacy.value("mode").toString();
    s.epsilon_spent = privacy.value("epsilon_spent").toDouble();
    s.epsilon_budget = privacy.value("epsilon_budget").toDouble();
    s.delta = privacy.value("delta").toDouble();
    return s;
}

std::optional<QList<PeerInfo>> parse_peers(const QByteArray& json) {
    const auto arr = array_field(json, "peers");
    if (!arr) return std::nullopt;
    QList<PeerInfo> out;
    for (const QJsonValue& v : *arr) {
        const QJsonObject o = v.toObject();
        PeerInfo p;
        p.name = o.value("name").toString();
        p.fingerprint = o.value("fingerprint").toString();
        p.island = int_of(o, "island");
        p.devices = int_of(o, "devices");
        p.steps_per_s = o.value("steps_per_s").toDouble();
        p.last_round = int_of(o, "last_round", -1);
        p.bytes_up = o.value("bytes_up").toDouble();
        p.bytes_down = o.value("bytes_down").toDouble();
        p.connected = o.value("connected").toBool();
        p.in_sync = o.value("in_sync").toBool();
        p.seconds_per_step = o.value("seconds_per_step").toDouble();
        p.up_bytes_per_s = o.value("up_bytes_per_s").toDouble();
        p.down_bytes_per_s = o.value("down_bytes_per_s").toDouble();
        p.compute_s_per_round = o.value("compute_s_per_round").toDouble();
        p.communication_s_per_round = o.value("communication_s_per_round").toDouble();
        p.utilisation = o.value("utilisation").toDouble();
        p.came_in_on = o.value("came_in_on").toString();
        p.came_from = o.value("came_from").toString();
        out.append(p);
    }
    return out;
}

std::optional<QList<RoundInfo>> parse_rounds(const QByteArray& json) {
    const auto arr = array_field(json, "rounds");
    if (!arr) return std::nullopt;
    QList<RoundInfo> out;
    for (const QJsonValue& v : *arr) {
        const QJsonObject o = v.toObject();
        RoundInfo r;
        r.round = int_of(o, "round");
        r.islands = int_of(o, "islands");
        r.inner_loss = o.value("inner_loss").toDouble();
        r.val_loss = o.value("val_loss").toDouble();
        r.bytes_up = o.value("bytes_up").toDouble();
        r.bytes_down = o.value("bytes_down").toDouble();
        r.compression_ratio = o.value("compression_ratio").toDouble();
        r.seconds = o.value("seconds").toDouble();
        out.append(r);
    }
    return out;
}

std::optional<QStringList> parse_log(const QByteArray& json) {
    const auto arr = array_field(json, "lines");
    if (!arr) return std::nullopt;
    QStringList out;
    for (const QJsonValue& v : *arr) out.append(v.toString());
    return out;
}

QString parse_error(const QByteArray& json) {
    const auto o = object_of(json);
    return o ? o->value("error").toString() : QString();
}

}  // namespace arch::gui
