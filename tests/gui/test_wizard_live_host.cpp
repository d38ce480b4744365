// tests/gui/test_wizard_live_host.cpp: "Host a run" against the real program, as a new user walks it,
// under Xvfb (tests/gui/run_isolated.sh: a network namespace of its own, with only loopback, so the
// wizard's defaults - every address, port 5555, the router asked for a mapping - touch nothing else).
// First every choice the pages offer is checked against the host's own run.toml parser; then the
// wizard is clicked through to a real `archipelago daemon`, which hosts; a real `archipelago peer`
// with nothing but its invite, its key and an empty folder joins and trains the run to its end. Each
// page's words are checked against what happened: the data came from the host, the host listened on
// every address at 5555 and said no gateway answered, and the app's peers table filled in.
#include <QAbstractButton>
#include <QComboBox>
#include <QDir>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProcess>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTemporaryDir>
#include <QtTest>

#include "gui/daemon_client.h"
#include "gui/host_wizard.h"
#include "tests/gui/wizard_pages.h"
#include "gui/run_toml.h"
#include "peers/run_config.h"

using namespace arch::gui;
using namespace arch::gui::test;

namespace {

bool enabled(QComboBox* box, int i) {
    return qobject_cast<QStandardItemModel*>(box->model())->item(i)->isEnabled();
}

const quint16 kControlPort = 7493;  // the namespace is the test's own: no other program holds it

QByteArray tail_of(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll().right(3000) : QByteArray("(no " + path.toUtf8() + ")");
}

}  // namespace

class TestWizardLiveHost : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    const QString bin_ = qEnvironmentVariable("ARCH_BIN_DIR") + "/archipelago";

  private slots:
    void every_choice_the_pages_offer_is_a_run_the_host_takes() {
        DaemonClient client(1, dir_.filePath("none"));
        HostWizard wizard(&client, bin_, dir_.filePath("runs"));
        auto* preset = child<QComboBox>(&wizard, "preset");
        auto* mode = child<QComboBox>(&wizard, "mode");
        auto* codec = child<QComboBox>(&wizard, "codec");
        auto* nat = child<QComboBox>(&wizard, "nat");
        int checked = 0;
        for (int p = 0; p < preset->count(); ++p)
            for (int m = 0; m < mode->count(); ++m)
                for (int n = 0; n < nat->count(); ++n) {
                    preset->setCurrentIndex(p);
                    mode->setCurrentIndex(m);
                    nat->setCurrentIndex(n);
                    for (int c = 0; c < codec->count(); ++c) {
                        if (!enabled(codec, c)) continue;  // greyed out for this mode
                        codec->setCurrentIndex(c);
                        const QString toml = to_run_toml(wizard.settings());
                        try {
                            (void)arch::parse_run_config(toml.toStdString(), "the wizard's run.toml");
                        } catch (const std::exception& e) {
                            QFAIL(qPrintable(QString("the host refuses what the wizard offers: %1\n%2").arg(e.what(), toml)));
                        }
                        ++checked;
                    }
                }
        QVERIFY(checked >= preset->count() * nat->count() * 3);
        // What the wire page greys out in streaming mode, the host refuses: the greying is not decoration.
        select_data(mode, "streaming");
        const int ef = codec->findData("fp4+ef+zstd");
        QVERIFY(!enabled(codec, ef));
        HostRunSettings s = wizard.settings();
        s.codec = "fp4+ef+zstd";
        QVERIFY_THROWS_EXCEPTION(std::exception, arch::parse_run_config(to_run_toml(s).toStdString(), "x"));
    }

    void walks_to_a_running_host_that_trains_a_peer_with_only_its_invite() {
        QVERIFY2(QFile::exists(bin_), qPrintable("no " + bin_ + " (ARCH_BIN_DIR)"));
        QProcess daemon;
        daemon.setProcessChannelMode(QProcess::MergedChannels);
        daemon.setStandardOutputFile(dir_.filePath("daemon.log"));
        const QString token = dir_.filePath("daemon.token");
        daemon.start(bin_, {"daemon", "--control-port", QString::number(kControlPort), "--token-file", token});
        QVERIFY(daemon.waitForStarted(10000));
        auto stop_daemon = qScopeGuard([&] {
            daemon.terminate();
            if (!daemon.waitForFinished(20000)) daemon.kill();
        });
        QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(token), 20000);

        DaemonClient client(kControlPort, token);
        DaemonStatus status;
        QList<PeerInfo> peers;
        connect(&client, &DaemonClient::status_received, this, [&](const DaemonStatus& s) { status = s; });
        connect(&client, &DaemonClient::peers_received, this, [&](const QList<PeerInfo>& p) { peers = p; });
        client.start_polling(200);
        QTRY_COMPARE_WITH_TIMEOUT(client.link(), DaemonClient::Link::Reachable, 20000);
        QCOMPARE(status.role, QString("idle"));

        HostWizard wizard(&client, bin_, dir_.filePath("runs"));
        QSignalSpy hosted(&wizard, &HostWizard::run_hosted);
        wizard.show();
        QVERIFY(QTest::qWaitForWindowExposed(&wizard));
        auto next = [&] { QTest::mouseClick(wizard.button(QWizard::NextButton), Qt::LeftButton); };

        // Model: GPT-2 and Llama presets, every one of them a preset the program knows.
        QVERIFY(wizard.currentPage()->subTitle().contains("GPT-2 or Llama"));
        auto* name = child<QLineEdit>(&wizard, "run_name");
        name->clear();
        QTest::keyClicks(name, "wizard-live");
        select_data(child<QComboBox>(&wizard, "preset"), "tiny");
        next();
        // Data: "the host serves the data" - the peer below has none of its own.
        QVERIFY(wizard.currentPage()->subTitle().contains("The host serves the data"));
        QVERIFY(child<QAbstractButton>(&wizard, "data_bundled")->isChecked());
        next();
        // Training
        child<QSpinBox>(&wizard, "rounds")->setValue(2);
        child<QSpinBox>(&wizard, "steps_per_round")->setValue(3);
        child<QSpinBox>(&wizard, "islands")->setValue(1);
        select_data(child<QComboBox>(&wizard, "mode"), "sync");
        next();
        // Wire: the defaults as a user gets them (every address, port 5555, ask the router).
        QCOMPARE(child<QLineEdit>(&wizard, "bind")->text(), QString("tcp://0.0.0.0:5555"));
        QCOMPARE(child<QComboBox>(&wizard, "nat")->currentData().toString(), QString("auto"));
        QCOMPARE(child<QComboBox>(&wizard, "codec")->currentData().toString(), QString("int8:block=256+zstd:1"));
        next();
        child<QPlainTextEdit>(&wizard, "peer_names")->setPlainText("island-a");
        next();
        const QString run_dir = QDir(dir_.filePath("runs")).absoluteFilePath("wizard-live");
        QCOMPARE(child<QLineEdit>(&wizard, "run_dir")->text(), run_dir);
        QTest::mouseClick(wizard.button(QWizard::FinishButton), Qt::LeftButton);
        QTRY_COMPARE_WITH_TIMEOUT(hosted.size(), 1, 30000);  // the real keygen and invite ran

        // The daemon hosts what the pages said.
        const QString daemon_log = dir_.filePath("daemon.log"), peer_log = dir_.filePath("peer.log");
        QTRY_VERIFY2_WITH_TIMEOUT(status.role == "host" && status.state != "failed", tail_of(daemon_log), 60000);
        QCOMPARE(status.run, QString("wizard-live"));
        QCOMPARE(status.mode, QString("sync"));
        QCOMPARE(status.islands, 1);
        // run.nat = "auto" in a namespace with no router: it says so, and the host goes on ("go on without").
        QTRY_VERIFY2_WITH_TIMEOUT(status.reachability == "no gateway answered", tail_of(daemon_log), 30000);
        QVERIFY(status.reachability_detail.contains("forward"));

        // A peer with only its invite, its key and an empty working folder.
        const QString invite = run_dir + "/peers/island-a.invite";
        QVERIFY(QFile::exists(invite));
        QProcess peer;
        peer.setProcessChannelMode(QProcess::MergedChannels);
        peer.setStandardOutputFile(dir_.filePath("peer.log"));
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("OMP_NUM_THREADS", "1");
        env.insert("ARCH_DATA_DIR", dir_.filePath("peer-data"));  // nothing prepared there
        peer.setProcessEnvironment(env);
        const QString workdir = dir_.filePath("peer-work");
        peer.start(bin_, {"peer", "--invite", invite, "--key", run_dir + "/peers/island-a.key", "--name", "island-a",
                          "--workdir", workdir});
        QVERIFY(peer.waitForStarted(10000));
        auto stop_peer = qScopeGuard([&] {
            peer.terminate();
            if (!peer.waitForFinished(20000)) peer.kill();
        });
        QTRY_VERIFY2_WITH_TIMEOUT(status.state == "finished", tail_of(daemon_log) + "\n" + tail_of(peer_log), 240000);
        QVERIFY(peer.state() == QProcess::NotRunning || peer.waitForFinished(60000));
        QCOMPARE(peer.exitStatus(), QProcess::NormalExit);
        QVERIFY2(peer.exitCode() == 0, tail_of(peer_log));
        QVERIFY2(!QDir(workdir + "/data/chunks").entryList(QDir::Files).isEmpty(), "the peer's data did not come from the host");

        // The app's peers table, as the host measured it: one round Δ to Δ, and the address it came in on.
        QTRY_VERIFY_WITH_TIMEOUT(peers.size() == 1 && peers[0].utilisation > 0, 10000);
        QCOMPARE(peers[0].name, QString("island-a"));
        QVERIFY(peers[0].compute_s_per_round > 0);
        QVERIFY(peers[0].utilisation <= 1);
        QVERIFY2(peers[0].came_in_on.endsWith(":5555"), qPrintable(peers[0].came_in_on));
    }
};

QTEST_MAIN(TestWizardLiveHost)
#include "test_wizard_live_host.moc"
