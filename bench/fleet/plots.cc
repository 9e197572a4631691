#include "bench/fleet/plots.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "bench/fleet/chart.h"
#include "bench/fleet/png_writer.h"
#include "bench/fleet/scenarios.h"

namespace tir::fleet {
namespace {

const RunResult *Find(const std::vector<RunResult> &results, const std::string &name, int shards) {
  for (const RunResult &r : results) {
    if (r.spec.name == name && r.spec.shards == shards) return &r;
  }
  return nullptr;
}

std::vector<int> ShardCounts(const std::vector<RunResult> &results, const std::string &name) {
  std::vector<int> counts;
  for (const RunResult &r : results) {
    if (r.spec.name == name) counts.push_back(r.spec.shards);
  }
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

// The middle shard count of a sweep: the one the time plots show.
int MiddleShards(const std::vector<RunResult> &results, const std::string &name) {
  std::vector<int> counts = ShardCounts(results, name);
  if (counts.empty()) return 0;
  for (int c : counts) {
    if (c == 8) return 8;
  }
  return counts[counts.size() / 2];
}

double PeakShardHits(const RunResult &r) {
  double peak = 0;
  for (const TimeSeries &h : r.shard_hits) peak = std::max(peak, h.MaxRate());
  return peak;
}

Series RateSeries(const std::string &label, const TimeSeries &ts, int color, double smooth_s = 5) {
  Series s{label, {}, {}, SeriesColor(color)};
  std::vector<double> rates = ts.Rates();
  int window = std::max(1, static_cast<int>(smooth_s / ts.bin_seconds()));
  for (size_t i = 0; i + window <= rates.size(); i += window) {
    double sum = 0;
    for (int j = 0; j < window; ++j) sum += rates[i + j];
    s.x.push_back((i + window / 2.0) * ts.bin_seconds());
    s.y.push_back(sum / window);
  }
  return s;
}

Series SampledSeries(const std::string &label, const TimeSeries &ts, int color) {
  Series s{label, {}, {}, SeriesColor(color)};
  for (size_t i = 0; i < ts.bins().size(); ++i) {
    s.x.push_back(i * ts.bin_seconds());
    s.y.push_back(ts.bins()[i]);
  }
  return s;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> WritePlots(const std::vector<RunResult> &results, const std::string &dir) {
  std::vector<std::string> written;
  auto save = [&](const Image &image, const std::string &name) -> absl::Status {
    std::string path = absl::StrCat(dir, "/", name);
    absl::Status status = WritePng(image, path);
    if (status.ok()) written.push_back(path);
    return status;
  };
  double capacity = results.empty() ? 0 : results.front().shard_capacity_per_s;

  // 1. Fleet load during the restart, warm against cold host tiers.
  {
    int shards = MiddleShards(results, kRestartCold);
    LineChart chart;
    chart.title = absl::StrCat("Fleet-wide restart: requests reaching the fleet (", shards, " shards)");
    chart.x_label = "seconds since the restart began";
    chart.y_label = "requests/s (5 s mean)";
    int color = 0;
    for (const char *name : {kRestartWarm, kRestartCold}) {
      if (const RunResult *r = Find(results, name, shards)) {
        chart.series.push_back(RateSeries(name, r->fleet_request_rate, color++));
      }
    }
    chart.references.push_back({absl::StrCat(shards, " shards' capacity"), shards * capacity});
    chart.log_y = true;
    if (absl::Status s = save(RenderLineChart(chart), "restart_fleet_load.png"); !s.ok()) return s;
  }

  // 2. The busiest shard's peak hits/s against one shard's capacity.
  {
    BarChart chart;
    chart.title = "Busiest shard's peak hits/s (1 s bins) by shard count";
    chart.y_label = "hits/s";
    chart.log_y = true;
    std::vector<int> counts = ShardCounts(results, kSteadyWarm);
    for (int c : counts) chart.categories.push_back(absl::StrCat(c, c == 1 ? " shard" : " shards"));
    int color = 0;
    for (const char *name : {kSteadyWarm, kSteadyDirect, kRestartWarm, kRestartCold}) {
      BarGroup group{name, {}, SeriesColor(color++)};
      for (int c : counts) {
        const RunResult *r = Find(results, name, c);
        group.values.push_back(r ? PeakShardHits(*r) : 0);
      }
      chart.groups.push_back(group);
    }
    chart.references.push_back({"one shard's measured capacity", capacity});
    if (absl::Status s = save(RenderBarChart(chart), "hits_per_shard.png"); !s.ok()) return s;
  }

  // 3. Fleet latency p99 by shard count.
  {
    LineChart chart;
    chart.title = "Host-tier miss to answer, p99, by shard count";
    chart.x_label = "shards";
    chart.y_label = "seconds";
    chart.log_y = true;
    int color = 0;
    for (const char *name : {kSteadyWarm, kSteadyDirect, kRestartWarm, kRestartCold, kRestartColdOwner}) {
      Series s{name, {}, {}, SeriesColor(color++)};
      for (int c : ShardCounts(results, name)) {
        const RunResult *r = Find(results, name, c);
        if (!r || r->fleet_latency.count() == 0) continue;
        s.x.push_back(c);
        s.y.push_back(r->fleet_latency.Quantile(0.99));
      }
      chart.series.push_back(s);
    }
    if (absl::Status s = save(RenderLineChart(chart), "fleet_latency_p99.png"); !s.ok()) return s;
  }

  // 3b. The busiest coordinator's utilization, forwards included.
  {
    LineChart chart;
    chart.title = "Busiest coordinator: share of its capacity in use (1 s bins, forwards included)";
    chart.x_label = "shards";
    chart.y_label = "peak utilization";
    int color = 0;
    for (const char *name : {kSteadyWarm, kSteadyDirect, kRestartWarm, kRestartCold, kRestartColdOwner}) {
      Series s{name, {}, {}, SeriesColor(color++)};
      for (int c : ShardCounts(results, name)) {
        const RunResult *r = Find(results, name, c);
        double peak = 0;
        for (const TimeSeries &b : r->shard_busy) peak = std::max(peak, b.MaxRate());
        s.x.push_back(c);
        s.y.push_back(peak);
      }
      chart.series.push_back(s);
    }
    chart.references.push_back({"saturated: the queue grows", 1.0});
    if (absl::Status s = save(RenderLineChart(chart), "shard_utilization.png"); !s.ok()) return s;
  }

  // 4. A new model: share of its kernels tuned against time since release.
  {
    LineChart chart;
    chart.title = "A new model released: its kernels tuned over time";
    chart.x_label = "seconds since release";
    chart.y_label = "% of its kernels tuned";
    int color = 0;
    for (int c : ShardCounts(results, kNewModel)) {
      const RunResult *r = Find(results, kNewModel, c);
      std::vector<double> done = r->new_model_kernel_done_s;
      std::sort(done.begin(), done.end());
      Series s{absl::StrCat(c, " shards"), {0}, {0}, SeriesColor(color++)};
      for (size_t i = 0; i < done.size(); ++i) {
        s.x.push_back(done[i]);
        s.y.push_back(100.0 * (i + 1) / done.size());
      }
      chart.series.push_back(s);
    }
    if (absl::Status s = save(RenderLineChart(chart), "new_model_tuned.png"); !s.ok()) return s;
  }

  // 5. Tuning queue wait p50 / p99 where there is tuning.
  {
    BarChart chart;
    int shards = MiddleShards(results, kNewModel);
    chart.title = absl::StrCat("Tuning queue wait, work item queued to leased (", shards, " shards)");
    chart.y_label = "seconds";
    BarGroup p50{"p50", {}, SeriesColor(0)}, p99{"p99", {}, SeriesColor(1)};
    const std::pair<const char *, const char *> kShort[] = {
        {kNewModel, "new model"}, {kLossSteady, "lost, steady"}, {kLossRestart, "lost, restart"}};
    for (const auto &[name, label] : kShort) {
      const RunResult *r = Find(results, name, shards);
      if (!r) continue;
      chart.categories.push_back(label);
      p50.values.push_back(r->queue_wait.Quantile(0.5));
      p99.values.push_back(r->queue_wait.Quantile(0.99));
    }
    chart.groups = {p50, p99};
    if (absl::Status s = save(RenderBarChart(chart), "queue_wait.png"); !s.ok()) return s;
  }

  // 6. Losing a shard during a cold restart: the tuning backlog.
  {
    int shards = MiddleShards(results, kLossRestart);
    const RunResult *r = Find(results, kLossRestart, shards);
    LineChart chart;
    chart.title = absl::StrCat("A shard lost at 60 s of a cold restart (", shards, " shards): tuning backlog");
    chart.x_label = "seconds since the restart began";
    chart.y_label = "work items";
    if (r) {
      chart.series.push_back(SampledSeries("items queued", r->queued_items, 0));
      chart.series.push_back(SampledSeries("workers busy", r->busy_workers, 1));
      chart.references.push_back({"tuning workers", static_cast<double>(r->tuning_workers)});
    }
    if (absl::Status s = save(RenderLineChart(chart), "shard_loss_backlog.png"); !s.ok()) return s;
  }
  return written;
}

}  // namespace tir::fleet
