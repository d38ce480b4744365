// gui/run_charts.h: the run view's two charts (Qt Charts): inner loss and validation loss per
// round, and megabytes up/down per round. set_rounds() replaces the points from the round history
// the daemon reports; axes follow the data.
#pragma once

#include <QList>
#include <QWidget>

#include "gui/daemon_types.h"

class QChartView;
class QLineSeries;
class QValueAxis;
class QChart;

namespace arch::gui {

class RunCharts : public QWidget {
    Q_OBJECT
  public:
    explicit RunCharts(QWidget* parent = nullptr);
    void set_rounds(const QList<RoundInfo>& rounds);

    QLineSeries* inner_loss() const { return inner_loss_; }
    QLineSeries* val_loss() const { return val_loss_; }
    QLineSeries* mb_up() const { return mb_up_; }
    QLineSeries* mb_down() const { return mb_down_; }

  private:
    QChartView* make_chart(const QString& title, QLineSeries* a, QLineSeries* b,
                           const QString& y_title);

    QLineSeries* inner_loss_;
    QLineSeries* val_loss_;
    QLineSeries* mb_up_;
    QLineSeries* mb_down_;
};

}  // namespace arch::gui
