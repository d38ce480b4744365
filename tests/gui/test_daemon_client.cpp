// tests/gui/test_daemon_client.cpp: DaemonClient against FakeDaemon on loopback: parsing of every
// endpoint, the bearer token, a refused token, commands' bodies and errors, and the "daemon not
// reachable" state when the daemon stops (and recovery when it is back), and the run view showing
// the privacy a run has spent. Waits on signals, never sleeps.
#include <QJsonDocument>
#include <QLabel>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "gui/daemon_client.h"
#include "gui/run_view.h"
#include "tests/gui/fake_daemon.h"

using arch::gui::DaemonClient;
using namespace arch::gui;
using namespace arch::gui::test;

class TestDaemonClient : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QString token_file(const QByteArray& token) {
        const QString path = dir_.filePath("token");
        QFile f(path);
        f.open(QIODevice::WriteOnly | QIODevice::Truncate);
        f.write(token + "\n");  // the client trims it
        return path;
    }

  private slots:
    void parses_json_shapes() {
        const auto s = parse_status(canned_status());
        QVERIFY(s);
        QCOMPARE(s->role, QString("host"));
        QCOMPARE(s->round, 3);
        QCOMPARE(s->rounds, 10);
        QCOMPARE(s->tokens_per_s, 5120.5);
        QCOMPARE(s->privacy_mode, QString("central"));
        QCOMPARE(s->epsilon_spent, 2.5);
        QCOMPARE(s->epsilon_budget, 8.0);
        QVERIFY(parse_status(R"({"role":"idle","privacy":null})")->privacy_mode.isEmpty());
        const auto peers = parse_peers(canned_peers());
        QVERIFY(peers);
        QCOMPARE(peers->size(), 2);
        QCOMPARE(peers->at(0).fingerprint, QString("AbCdEf0123456789xyz"));
        QCOMPARE(peers->at(0).bytes_up, 1200000.0);
        QVERIFY(peers->at(0).connected && peers->at(0).in_sync);
        QCOMPARE(peers->at(1).last_round, -1);  // null: no round yet
        QCOMPARE(peers->at(1).devices, 2);
        const auto rounds = parse_rounds(canned_rounds());
        QVERIFY(rounds);
        QCOMPARE(rounds->size(), 3);
        QCOMPARE(rounds->at(2).val_loss, 6.0);
        QCOMPARE(rounds->at(2).compression_ratio, 3.95);
        QCOMPARE(parse_log(R"({"lines":["a","b"]})"),
                 std::optional<QStringList>(QStringList{"a", "b"}));
        QCOMPARE(parse_error(R"({"error":"bad invite"})"), QString("bad invite"));
    }

    void refuses_wrong_shapes() {
        QVERIFY(!parse_status("not json"));
        QVERIFY(!parse_status("[1,2]"));
        QVERIFY(!parse_peers(R"({"peers":{}})"));
        QVERIFY(!parse_rounds(R"({"nope":[]})"));
        QVERIFY(!parse_log(""));
    }

    void polls_every_endpoint_with_the_token() {
        FakeDaemon fake("s3cret");
        QVERIFY(fake.listen());
        DaemonClient client(fake.port(), token_file("s3cret"));
        QSignalSpy status(&client, &DaemonClient::status_received);
        QSignalSpy peers(&client, &DaemonClient::peers_received);
        QSignalSpy rounds(&client, &DaemonClient::rounds_received);
        QSignalSpy log(&client, &DaemonClient::log_received);
        client.poll_now();
        QVERIFY(status.wait(5000) || status.size() == 1);
        QTRY_VERIFY_WITH_TIMEOUT(peers.size() == 1 && rounds.size() == 1 && log.size() == 1, 5000);
        QCOMPARE(client.link(), DaemonClient::Link::Reachable);
        QCOMPARE(status[0][0].value<DaemonStatus>().run, QString("kjv-demo"));
        QCOMPARE(rounds[0][0].value<QList<RoundInfo>>().size(), 3);
        QCOMPARE(log[0][0].toStringList(), QStringList({"round 2 done", "round 3 done"}));
        for (const FakeRequest& r : fake.requests)
            QCOMPARE(r.authorization, QByteArray("Bearer s3cret"));
        QVERIFY(fake.requests.size() == 4);
    }

    void peers_table_shows_each_peers_link_rates_round_times_and_address() {
        FakeDaemon fake("t");
        QVERIFY(fake.listen());
        DaemonClient client(fake.port(), token_file("t"));
        RunView view(&client, "archipelago");
        const auto peers = parse_peers(canned_peers());
        QVERIFY(peers);
        view.show_peers(*peers);
        auto* table = view.findChild<QTableWidget*>("peers_table");
        QVERIFY(table);
        auto cell = [&](int row, const QString& column) {
            for (int c = 0; c < table->columnCount(); ++c)
                if (table->horizontalHeaderItem(c)->text() == column) return table->item(row, c)->text();
            return QString("no column " + column);
        };
        QCOMPARE(cell(0, "s/step"), QString("0.286"));
        QCOMPARE(cell(0, "up MB/s"), QString("2.50"));
        QCOMPARE(cell(0, "down MB/s"), QString("12.50"));
        QCOMPARE(cell(1, "up MB/s"), QString("-"));  // nothing measured yet
        QCOMPARE(cell(0, "compute s/round"), QString("14.30"));
        QCOMPARE(cell(0, "comm s/round"), QString("1.70"));
        QCOMPARE(cell(0, "busy"), QString("89%"));
        QCOMPARE(cell(0, "came in on"), QString("[2001:db8::1]:5555"));
        QCOMPARE(cell(1, "compute s/round"), QString("-"));
        QCOMPARE(cell(1, "busy"), QString("-"));
        QCOMPARE(cell(1, "came in on"), QString("-"));
        QCOMPARE(cell(0, "connected"), QString("yes"));
    }

    void run_view_shows_the_privacy_spent_the_rounds_h_and_the_reachability() {
        FakeDaemon fake("t");
        QVERIFY(fake.listen());
        DaemonClient client(fake.port(), token_file("t"));
        RunView view(&client, "archipelago");
        auto* privacy = view.findChild<QLabel*>("privacy");
        auto* steps = view.findChild<QLabel*>("steps_per_round");
        QVERIFY(privacy);
        QVERIFY(steps);
        QVERIFY(privacy->isHidden());  // a run without differential privacy
        QVERIFY(steps->isHidden());    // no round yet
        auto* reachability = view.findChild<QLabel*>("reachability");
        QVERIFY(reachability);
        QVERIFY(reachability->isHidden());  // nothing mapped yet
        view.show_status(*parse_status(canned_status()));
        QVERIFY(!privacy->isHidden());
        QCOMPARE(privacy->text(), QString("privacy (central): ε 2.50 of 8 spent, δ 1e-05"));
        QVERIFY(!steps->isHidden());
        QCOMPARE(steps->text(), QString("H 117 (auto: a sync 11.40 s, a step 0.093 s; 95% busy overlapped)"));
        QVERIFY(!reachability->isHidden());
        QCOMPARE(reachability->text(), QString("reachable at tcp://203.0.113.7:5555 (mapped)"));
    }

    void wrong_token_is_a_clear_state() {
        FakeDaemon fake("right");
        QVERIFY(fake.listen());
        DaemonClient client(fake.port(), token_file("wrong"));
        QSignalSpy link(&client, &DaemonClient::link_changed);
        client.poll_now();
        QTRY_COMPARE_WITH_TIMEOUT(client.link(), DaemonClient::Link::Unauthorized, 5000);
        QVERIFY(client.link_reason().contains("refused the token"));
    }

    void commands_post_json_and_report_errors() {
        FakeDaemon fake("t");
        QVERIFY(fake.listen());
        DaemonClient client(fake.port(), token_file("t"));
        QSignalSpy done(&client, &DaemonClient::command_finished);
        client.join("endpoint = tcp://127.0.0.1:5555\n", "/keys/me.key");
        QTRY_COMPARE_WITH_TIMEOUT(done.size(), 1, 5000);
        QCOMPARE(done[0][0].toString(), QString("/api/join"));
        QVERIFY(done[0][1].toBool());
        const QJsonObject body = QJsonDocument::fromJson(fake.posts().value(0).body).object();
        QCOMPARE(body["invite"].toString(), QString("endpoint = tcp://127.0.0.1:5555\n"));
        QCOMPARE(body["key"].toString(), QString("/keys/me.key"));

        fake.post_error = "no run to pause";
        client.pause();
        QTRY_COMPARE_WITH_TIMEOUT(done.size(), 2, 5000);
        QCOMPARE(done[1][0].toString(), QString("/api/pause"));
        QVERIFY(!done[1][1].toBool());
        QCOMPARE(done[1][2].toString(), QString("no run to pause"));
    }

    void daemon_that_stops_reads_as_not_reachable_then_recovers() {
        auto fake = std::make_unique<FakeDaemon>("t");
        QVERIFY(fake->listen());
        const quint16 port = fake->port();
        DaemonClient client(port, token_file("t"));
        client.set_timeout_ms(1000);
        client.start_polling(100);
        QTRY_COMPARE_WITH_TIMEOUT(client.link(), DaemonClient::Link::Reachable, 5000);
        fake->stop();
        fake.reset();
        QTRY_COMPARE_WITH_TIMEOUT(client.link(), DaemonClient::Link::Unreachable, 5000);
        QVERIFY2(client.link_reason().contains("daemon not reachable on 127.0.0.1:" +
                                               QString::number(port)),
                 qPrintable(client.link_reason()));
        FakeDaemon again("t");
        QVERIFY(again.listen(port));
        QTRY_COMPARE_WITH_TIMEOUT(client.link(), DaemonClient::Link::Reachable, 5000);
    }

    void hung_daemon_times_out_as_not_reachable() {
        QTcpServer silent;  // accepts connections and never answers
        QVERIFY(silent.listen(QHostAddress::LocalHost, 0));
        DaemonClient client(silent.serverPort(), token_file("t"));
        client.set_timeout_ms(300);
        client.poll_now();
        QTRY_COMPARE_WITH_TIMEOUT(client.link(), DaemonClient::Link::Unreachable, 5000);
        QVERIFY(client.link_reason().contains("no answer within 300 ms"));
    }
};

QTEST_MAIN(TestDaemonClient)  // widgets: the run view
#include "test_daemon_client.moc"
