// gui/run_charts.cpp: RunCharts. Each chart has a round axis (x) and a value axis (y) shared by its
// two series; rescale() fits both axes to the points with a little headroom. A round whose val
// loss is 0 or -1 (not measured; the API writes -1 for an unknown loss) adds no point.
#include "gui/run_charts.h"

#include <QChart>
#include <QChartView>
#include <QHBoxLayout>
#include <QLineSeries>
#include <QValueAxis>
#include <algorithm>
#include <cmath>
#include <limits>

namespace arch::gui {
namespace {

void rescale(QChart* chart) {
    double xmax = 1, ymin = std::numeric_limits<double>::max(),
           ymax = std::numeric_limits<double>::lowest();
    for (QAbstractSeries* s : chart->series()) {
        for (const QPointF& p : static_cast<QLineSeries*>(s)->points()) {
            xmax = std::max(xmax, p.x());
            ymin = std::min(ymin, p.y());
            ymax = std::max(ymax, p.y());
        }
    }
    if (ymin > ymax) ymin = 0, ymax = 1;
    const double pad = std::max(1e-3, (ymax - ymin) * 0.08);
    auto* x = static_cast<QValueAxis*>(chart->axes(Qt::Horizontal).first());
    x->setRange(0, xmax);
    x->setTickInterval(std::max(1.0, std::ceil(xmax / 10)));  // whole rounds, at most ~10 ticks
    chart->axes(Qt::Vertical).first()->setRange(std::max(0.0, ymin - pad), ymax + pad);
}

}  // namespace

RunCharts::RunCharts(QWidget* parent) : QWidget(parent) {
    inner_loss_ = new QLineSeries;
    inner_loss_->setName("inner loss (mean over islands)");
    val_loss_ = new QLineSeries;
    val_loss_->setName("validation loss (global model)");
    mb_up_ = new QLineSeries;
    mb_up_->setName("MB up (pseudo-gradients)");
    mb_down_ = new QLineSeries;
    mb_down_->setName("MB down (updates)");
    for (QLineSeries* s : {inner_loss_, val_loss_, mb_up_, mb_down_}) s->setPointsVisible(true);
    auto* box = new QHBoxLayout(this);
    box->setContentsMargins(0, 0, 0, 0);
    box->addWidget(make_chart("Loss per round", inner_loss_, val_loss_, "loss"));
    box->addWidget(make_chart("Bandwidth per round", mb_up_, mb_down_, "MB"));
}

QChartView* RunCharts::make_chart(const QString& title, QLineSeries* a, QLineSeries* b,
                                  const QString& y_title) {
    auto* chart = new QChart;
    chart->setTitle(title);
    chart->addSeries(a);
    chart->addSeries(b);
    auto* x = new QValueAxis;
    x->setTitleText("round");
    x->setLabelFormat("%d");
    x->setTickType(QValueAxis::TicksDynamic);
    x->setTickAnchor(0);
    auto* y = new QValueAxis;
    y->setTitleText(y_title);
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    for (QLineSeries* s : {a, b}) {
        s->attachAxis(x);
        s->attachAxis(y);
    }
    chart->legend()->setAlignment(Qt::AlignBottom);
    chart->setMargins(QMargins(4, 4, 4, 4));
    auto* view = new QChartView(chart);
    view->setRenderHint(QPainter::Antialiasing);
    view->setMinimumSize(360, 260);
    return view;
}

void RunCharts::set_rounds(const QList<RoundInfo>& rounds) {
    QList<QPointF> inner, val, up, down;
    for (const RoundInfo& r : rounds) {
        if (r.inner_loss >= 0) inner.append({double(r.round), r.inner_loss});  // -1: unknown
        if (r.val_loss > 0) val.append({double(r.round), r.val_loss});
        up.append({double(r.round), r.bytes_up / 1e6});
        down.append({double(r.round), r.bytes_down / 1e6});
    }
    inner_loss_->replace(inner);
    val_loss_->replace(val);
    mb_up_->replace(up);
    mb_down_->replace(down);
    rescale(inner_loss_->chart());
    rescale(mb_up_->chart());
}

}  // namespace arch::gui
