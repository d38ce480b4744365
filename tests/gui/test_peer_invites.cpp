// tests/gui/test_peer_invites.cpp: the host's "Invite peers" panel with the real `archipelago`
// (from ARCH_BIN_DIR, skipped with a reason when it is not built): "Add peer" makes a key pair and
// an invite through QProcess, shows the invite text, and the allow-list in the run folder grows;
// while the daemon hosts the run (a FakeDaemon here), invite and Revoke go through its control API.
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <QJsonDocument>
#include <QJsonObject>

#include "gui/daemon_client.h"
#include "gui/peer_invites.h"
#include "gui/run_toml.h"
#include "tests/gui/fake_daemon.h"

using namespace arch::gui;

class TestPeerInvites : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QString bin_;
    QString toml_;

  private slots:
    void initTestCase() {
        bin_ = qEnvironmentVariable("ARCH_BIN_DIR") + "/archipelago";
        if (!QFileInfo(bin_).isExecutable())
            QSKIP("needs build/bin/archipelago (ARCH_BIN_DIR); not built here");
        HostRunSettings s;
        s.name = "invite-test";
        s.run_dir = dir_.filePath("run");
        QDir().mkpath(s.run_dir);
        toml_ = s.run_dir + "/run.toml";
        QFile f(toml_);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(to_run_toml(s).toUtf8());
    }

    void add_peer_makes_key_and_invite() {
        PeerInvites panel(bin_);
        panel.set_run_toml(toml_);
        QSignalSpy made(&panel, &PeerInvites::invite_made);
        QSignalSpy failed(&panel, &PeerInvites::invite_failed);
        panel.findChild<QLineEdit*>("peer_name")->setText("alice");
        panel.findChild<QPushButton*>("add_peer")->click();
        QTRY_VERIFY_WITH_TIMEOUT(made.size() + failed.size() == 1, 10000);
        QVERIFY2(failed.isEmpty(), qPrintable(failed.value(0).value(1).toString()));
        QVERIFY(QFile::exists(dir_.filePath("run/peers/alice.key")));
        QVERIFY(QFile::exists(dir_.filePath("run/peers/alice.invite")));
        // The wizard's bind is every address: the invite lists this machine's, 127.0.0.1 last.
        QVERIFY(panel.invite_text().contains("tcp://127.0.0.1:5555"));
        QFile allow(dir_.filePath("run/allow_list.txt"));
        QVERIFY(allow.open(QIODevice::ReadOnly));
        QVERIFY(allow.readAll().contains("alice"));

        auto* invited = panel.findChild<QTableWidget*>("invited_peers");
        QCOMPARE(invited->rowCount(), 1);
        PeerInfo p;
        p.name = "alice";
        p.connected = true;
        p.island = 1;
        panel.update_peers({p});
        QCOMPARE(invited->item(0, 1)->text(), QString("admitted, island 1"));
    }

    void pasted_public_key_needs_no_keygen() {
        QProcess keygen;
        keygen.start(bin_, {"keygen", "--out", dir_.filePath("bob.key")});
        QVERIFY(keygen.waitForFinished(10000) && keygen.exitCode() == 0);
        QFile pub(dir_.filePath("bob.key.pub"));
        QVERIFY(pub.open(QIODevice::ReadOnly));
        PeerInvites panel(bin_);
        panel.set_run_toml(toml_);
        QSignalSpy made(&panel, &PeerInvites::invite_made);
        panel.add_peer("bob", QString::fromUtf8(pub.readAll()).trimmed());
        QTRY_COMPARE_WITH_TIMEOUT(made.size(), 1, 10000);
        QVERIFY(!QFile::exists(dir_.filePath("run/peers/bob.key")));  // the secret stays with bob
        QVERIFY(QFile::exists(dir_.filePath("run/peers/bob.invite")));
    }

    void a_failing_invite_is_reported() {
        PeerInvites panel(bin_);
        panel.set_run_toml(toml_);
        QSignalSpy failed(&panel, &PeerInvites::invite_failed);
        panel.add_peer("carol", "not-a-key");
        QTRY_COMPARE_WITH_TIMEOUT(failed.size(), 1, 10000);
        QVERIFY(!failed[0][1].toString().isEmpty());
    }

    void while_hosting_invite_and_revoke_go_through_the_daemon() {
        test::FakeDaemon fake("s3cret");
        QVERIFY(fake.listen());
        const QString token = dir_.filePath("token");
        QFile t(token);
        QVERIFY(t.open(QIODevice::WriteOnly));
        t.write("s3cret\n");
        t.close();
        const QByteArray invite = "host-endpoint = 'tcp://127.0.0.1:5555'\n";
        fake.replies["/api/invite"] =
            QJsonDocument(QJsonObject{{"ok", true}, {"name", "dave"}, {"fingerprint", "ab"}, {"invite", QString(invite)}})
                .toJson(QJsonDocument::Compact);
        DaemonClient client(fake.port(), token);
        PeerInvites panel(bin_);
        panel.set_run_toml(toml_);
        panel.set_daemon(&client);
        panel.set_hosting(true);
        QSignalSpy made(&panel, &PeerInvites::invite_made);
        const QString key = "rq:rr6BStLDzo1ai5IW0y[ZvJ#{l!%.wGf<bQDhx";  // 40 Z85 characters
        panel.add_peer("dave", "public-key = '" + key + "'");
        QTRY_COMPARE_WITH_TIMEOUT(made.size(), 1, 10000);
        const QJsonObject posted = QJsonDocument::fromJson(fake.posts().value(0).body).object();
        QCOMPARE(fake.posts().value(0).path, QByteArray("/api/invite"));
        QCOMPARE(posted.value("name").toString(), QString("dave"));
        QCOMPARE(posted.value("public_key").toString(), key);
        QFile written(dir_.filePath("run/peers/dave.invite"));
        QVERIFY(written.open(QIODevice::ReadOnly));
        QCOMPARE(written.readAll(), invite);

        auto* revoke = panel.findChild<QPushButton*>("revoke_dave");
        QVERIFY(revoke && revoke->isEnabled());
        revoke->click();
        auto* invited = panel.findChild<QTableWidget*>("invited_peers");
        int row = 0;
        while (row < invited->rowCount() && invited->item(row, 0)->text() != "dave") ++row;
        QVERIFY(row < invited->rowCount());
        QTRY_COMPARE_WITH_TIMEOUT(invited->item(row, 1)->text(), QString("revoked"), 10000);
        QCOMPARE(fake.posts().last().path, QByteArray("/api/revoke"));
        QCOMPARE(QJsonDocument::fromJson(fake.posts().last().body).object().value("name").toString(), QString("dave"));
        QVERIFY(!revoke->isEnabled());

        panel.set_hosting(false);  // not hosting: no Revoke, and invites go through the CLI again
        QVERIFY(!panel.findChild<QPushButton*>("revoke_dave")->isEnabled());
    }
};

QTEST_MAIN(TestPeerInvites)
#include "test_peer_invites.moc"
