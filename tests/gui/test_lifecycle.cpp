// tests/gui/test_lifecycle.cpp: the app and its daemon, with fake_archipelago as a real separate
// process: closing the window leaves an attached daemon running; it stops a daemon it started
// (SIGTERM) unless "keep running" is set; a daemon that dies shows as the red "not reachable"
// banner.
#include <signal.h>

#include <QLabel>
#include <QProcess>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QtTest>

#include "gui/main_window.h"
#include "tests/gui/fake_daemon.h"

using namespace arch::gui;
using namespace arch::gui::test;

namespace {

bool alive(qint64 pid) {
    return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) == 0;
}

bool answers(quint16 port) {
    QTcpSocket s;
    s.connectToHost(QHostAddress::LocalHost, port);
    return s.waitForConnected(1000);
}

}  // namespace

class TestLifecycle : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QString fake_bin_ = QCoreApplication::applicationDirPath() + "/fake_archipelago";

    AppSettings settings(quint16 port) {
        AppSettings s;
        s.control_port = port;
        s.token_file = dir_.filePath(QString("token-%1").arg(port));
        s.archipelago = fake_bin_;
        s.runs_dir = dir_.filePath("runs");
        s.keys_dir = dir_.filePath("keys");
        return s;
    }

  private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY2(QFileInfo(fake_bin_).isExecutable(), qPrintable(fake_bin_));
    }

    void closing_leaves_an_attached_daemon_running() {
        const quint16 port = free_port();
        const AppSettings s = settings(port);
        QProcess daemon;  // started by "someone else" (this test), before the app
        daemon.start(fake_bin_, {"daemon", "--control-port", QString::number(port), "--token-file",
                                 s.token_file});
        QVERIFY(daemon.waitForStarted());
        QTRY_VERIFY_WITH_TIMEOUT(answers(port), 5000);

        auto window = std::make_unique<MainWindow>(s);
        window->show();
        window->connect_daemon();
        QTRY_COMPARE_WITH_TIMEOUT(window->local_daemon()->ownership(),
                                  LocalDaemon::Ownership::Attached, 5000);
        QTRY_COMPARE_WITH_TIMEOUT(window->client()->link(), DaemonClient::Link::Reachable, 5000);
        QVERIFY(window->close());
        window.reset();
        QCoreApplication::processEvents();
        QCOMPARE(daemon.state(), QProcess::Running);
        QVERIFY(answers(port));
        daemon.terminate();
        QVERIFY(daemon.waitForFinished(5000));
    }

    void closing_stops_a_daemon_it_started() {
        const quint16 port = free_port();
        auto window = std::make_unique<MainWindow>(settings(port));
        window->show();
        window->connect_daemon();
        QTRY_COMPARE_WITH_TIMEOUT(window->local_daemon()->ownership(),
                                  LocalDaemon::Ownership::Started, 5000);
        const qint64 pid = window->local_daemon()->pid();
        QTRY_COMPARE_WITH_TIMEOUT(window->client()->link(), DaemonClient::Link::Reachable, 10000);
        QVERIFY(window->close());
        QTRY_VERIFY_WITH_TIMEOUT(!alive(pid), 5000);
    }

    void keep_running_leaves_a_started_daemon() {
        const quint16 port = free_port();
        AppSettings s = settings(port);
        s.keep_daemon_running = true;
        auto window = std::make_unique<MainWindow>(s);
        window->show();
        window->connect_daemon();
        QTRY_COMPARE_WITH_TIMEOUT(window->client()->link(), DaemonClient::Link::Reachable, 10000);
        const qint64 pid = window->local_daemon()->pid();
        QVERIFY(window->close());
        window.reset();
        QVERIFY(alive(pid));
        QVERIFY(answers(port));
        ::kill(static_cast<pid_t>(pid), SIGTERM);
        QTRY_VERIFY_WITH_TIMEOUT(!alive(pid), 5000);
    }

    void a_daemon_that_dies_shows_a_clear_state() {
        const quint16 port = free_port();
        AppSettings s = settings(port);
        s.start_daemon = false;
        QProcess daemon;
        daemon.start(fake_bin_, {"daemon", "--control-port", QString::number(port), "--token-file",
                                 s.token_file});
        QVERIFY(daemon.waitForStarted());
        QTRY_VERIFY_WITH_TIMEOUT(answers(port), 5000);
        MainWindow window(s);
        window.show();
        window.connect_daemon();
        QTRY_COMPARE_WITH_TIMEOUT(window.client()->link(), DaemonClient::Link::Reachable, 5000);
        QVERIFY(!window.banner()->isVisibleTo(&window));
        daemon.kill();
        QVERIFY(daemon.waitForFinished(5000));
        QTRY_COMPARE_WITH_TIMEOUT(window.client()->link(), DaemonClient::Link::Unreachable, 5000);
        QVERIFY(window.banner()->isVisibleTo(&window));
        QVERIFY2(window.banner()->text().contains("daemon not reachable"),
                 qPrintable(window.banner()->text()));
        QVERIFY(window.isVisible());  // the window is alive and answers events
        QTest::mouseClick(window.findChild<QWidget*>("daemon_banner"), Qt::LeftButton);
    }

    void no_daemon_and_attach_only_says_so() {
        const quint16 port = free_port();
        AppSettings s = settings(port);
        s.start_daemon = false;
        MainWindow window(s);
        QSignalSpy ready(window.local_daemon(), &LocalDaemon::ready);
        window.connect_daemon();
        QTRY_COMPARE_WITH_TIMEOUT(ready.size(), 1, 5000);
        QCOMPARE(ready[0][0].value<LocalDaemon::Ownership>(), LocalDaemon::Ownership::None);
        QTRY_COMPARE_WITH_TIMEOUT(window.client()->link(), DaemonClient::Link::Unreachable, 5000);
    }
};

QTEST_MAIN(TestLifecycle)
#include "test_lifecycle.moc"
