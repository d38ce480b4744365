// tests/gui/test_peer_invites.cpp: the host's "Invite peers" panel with the real `archipelago`
// (from ARCH_BIN_DIR, skipped with a reason when it is not built): "Add peer" makes a key pair and
// an invite through QProcess, shows the invite text, and the allow-list in the run folder grows.
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "gui/peer_invites.h"
#include "gui/run_toml.h"

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
};

QTEST_MAIN(TestPeerInvites)
#include "test_peer_invites.moc"
