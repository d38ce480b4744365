// gui/daemon_types.h: what the daemon's control API returns (/api/status, /api/peers, /api/rounds,
// /api/log), as plain structs, and the functions that read them from JSON. Pure: no network, no Qt
// widgets. Missing or mistyped fields read as their defaults; extra fields are ignored.
#pragma once

#include <QByteArray>
#include <QList>
#include <QString>
#include <QStringList>
#include <optional>

namespace arch::gui {

struct DaemonStatus {
    QString role = "idle";  // host | peer | idle
    QString run;
    QString state;  // waiting | training | paused | finished | stopped | failed
    int round = 0, rounds = 0;
    QString mode;  // sync | async
    int islands = 0;
    QString theta_hash;
    bool paused = false;
    double tokens_per_s = 0, uptime_s = 0;
    int steps_per_round = 0;  // H of the round in progress (host) or the last one trained (peer); 0: none yet
    QString steps_why;        // why that H: inner.steps_per_round, or what H from the link was chosen from
    // A host's port mapping on its router (docs/net.md, "Hosting from home"): "off" where none is tried.
    QString reachability = "off", external_endpoint, reachability_detail;
    // Differential privacy ("privacy": null when off: privacy_mode stays empty).
    QString privacy_mode;
    double epsilon_spent = 0, epsilon_budget = 0, delta = 0;
};

struct PeerInfo {
    QString name, fingerprint;
    int island = 0, devices = 0;
    double steps_per_s = 0;
    int last_round = -1;
    double bytes_up = 0, bytes_down = 0;
    bool connected = false, in_sync = false;
    // Measured by the host (docs/net.md, "Time that scales with the link"); 0: not yet.
    double seconds_per_step = 0, up_bytes_per_s = 0, down_bytes_per_s = 0;
    // Its last round, by the host's clock: inner steps, the rest (link and waiting), the share computed.
    double compute_s_per_round = 0, communication_s_per_round = 0, utilisation = 0;
    QString came_in_on, came_from;  // the host's address it reached, and its own (empty: not known)
};

struct RoundInfo {
    int round = 0, islands = 0;
    double inner_loss = 0, val_loss = 0;  // -1 (or val_loss 0): not measured this round
    double bytes_up = 0, bytes_down = 0;
    double compression_ratio = 0;  // fp32 bytes / wire bytes
    double seconds = 0;
};

// Each returns nullopt when the body is not a JSON object of the expected shape.
std::optional<DaemonStatus> parse_status(const QByteArray& json);
std::optional<QList<PeerInfo>> parse_peers(const QByteArray& json);
std::optional<QList<RoundInfo>> parse_rounds(const QByteArray& json);
std::optional<QStringList> parse_log(const QByteArray& json);
// {"error":"message"} -> message; anything else -> empty.
QString parse_error(const QByteArray& json);

}  // namespace arch::gui
