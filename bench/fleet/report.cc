#include "bench/fleet/report.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tir::fleet {
namespace {

std::string TierName(HostTier tier) {
  switch (tier) {
    case HostTier::kWarm: return "warm";
    case HostTier::kCold: return "cold";
    case HostTier::kNone: return "none";
  }
  return "";
}

// Seconds, in the unit that reads best.
std::string Duration(double s) {
  if (s < 0) return "-";
  if (s == 0) return "0";
  if (s < 1e-3) return absl::StrFormat("%.0f us", s * 1e6);
  if (s < 1) return absl::StrFormat("%.1f ms", s * 1e3);
  if (s < 120) return absl::StrFormat("%.1f s", s);
  return absl::StrFormat("%.1f min", s / 60);
}

std::string Count(double v) {
  if (v >= 1e6) return absl::StrFormat("%.2fM", v / 1e6);
  if (v >= 1e4) return absl::StrFormat("%.1fK", v / 1e3);
  return absl::StrFormat("%.0f", v);
}

}  // namespace

Table InputsTable(const Calibration &calibration) {
  Table t;
  t.header = {"input", "value", "source", "where / why"};
  for (const InputRow &r : calibration.rows) t.rows.push_back({r.name, r.value, r.source, r.where});
  return t;
}

Table ResultsTable(const std::vector<RunResult> &results, bool numeric) {
  auto duration = [numeric](double s) { return numeric ? (s < 0 ? "" : absl::StrFormat("%.6g", s)) : Duration(s); };
  auto count = [numeric](double v) { return numeric ? absl::StrFormat("%.0f", v) : Count(v); };
  const std::string none = numeric ? "" : "-";
  Table t;
  t.header = {"scenario", "shards", "host tier", "lookups", "host hit %", "fleet req/s peak", "hits/s/shard max",
              "hits/s/shard mean", "max/capacity", "peak util", "lookup p50", "lookup p99", "fleet p50", "fleet p99", "untuned answers", "queue wait p50",
              "queue wait p99", "new model tuned in", "re-tuned keys", "extra GPU-h", "last re-tune done", "wall s"};
  if (numeric) {
    for (std::string &h : t.header) {
      if (h.find("p50") != std::string::npos || h.find("p99") != std::string::npos || h == "new model tuned in" ||
          h == "last re-tune done") {
        h += " s";
      }
    }
  }
  for (const RunResult &r : results) {
    const RunSpec &s = r.spec;
    double window = s.window_s;
    double max_peak = 0, mean_sum = 0;
    for (const TimeSeries &h : r.shard_hits) {
      max_peak = std::max(max_peak, h.MaxRate());
      mean_sum += h.MeanRate(0, window);
    }
    double mean = r.shard_hits.empty() ? 0 : mean_sum / r.shard_hits.size();
    double peak_util = 0;
    for (const TimeSeries &b : r.shard_busy) peak_util = std::max(peak_util, b.MaxRate());
    double host_hit = r.lookups ? 100.0 * r.host_hits / r.lookups : 0;
    const LogHistogram &wait = s.new_model_at_s >= 0 ? r.queue_wait_new_model
                               : s.lose_shard >= 0   ? r.queue_wait_retune
                                                     : r.queue_wait;
    t.rows.push_back({
        s.name,
        absl::StrCat(s.shards),
        TierName(s.host_tier),
        count(r.lookups),
        s.host_tier == HostTier::kNone ? none : absl::StrFormat("%.2f", host_hit),
        count(r.fleet_request_rate.MaxRate()),
        count(max_peak),
        count(mean),
        absl::StrFormat("%.2f", max_peak / r.shard_capacity_per_s),
        absl::StrFormat("%.2f", peak_util),
        duration(r.lookup_latency.Quantile(0.5)),
        duration(r.lookup_latency.Quantile(0.99)),
        duration(r.fleet_latency.Quantile(0.5)),
        duration(r.fleet_latency.Quantile(0.99)),
        count(r.heuristic_answers),
        wait.count() ? duration(wait.Quantile(0.5)) : none,
        wait.count() ? duration(wait.Quantile(0.99)) : none,
        s.new_model_at_s >= 0 ? duration(r.new_model_all_tuned_s) : none,
        s.lose_shard >= 0 ? count(r.retuned_keys) : none,
        s.lose_shard >= 0 ? absl::StrFormat("%.1f", r.retune_gpu_seconds / 3600) : none,
        s.lose_shard >= 0 ? duration(r.retune_last_done_s) : none,
        absl::StrFormat("%.1f", r.wall_s),
    });
  }
  return t;
}

std::string FormatText(const Table &table) {
  std::vector<size_t> width(table.header.size(), 0);
  auto measure = [&](const std::vector<std::string> &row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], row[i].size());
  };
  measure(table.header);
  for (const auto &row : table.rows) measure(row);
  std::string out;
  auto emit = [&](const std::vector<std::string> &row) {
    for (size_t i = 0; i < row.size(); ++i) {
      out += row[i];
      if (i + 1 < row.size()) out += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out += "\n";
  };
  emit(table.header);
  std::vector<std::string> rule;
  for (size_t w : width) rule.push_back(std::string(w, '-'));
  emit(rule);
  for (const auto &row : table.rows) emit(row);
  return out;
}

std::string FormatCsv(const Table &table) {
  std::string out;
  auto emit = [&](const std::vector<std::string> &row) {
    for (size_t i = 0; i < row.size(); ++i) {
      if (i) out += ",";
      if (row[i].find_first_of(",\"\n") == std::string::npos) {
        out += row[i];
      } else {
        out += "\"";
        for (char c : row[i]) out += c == '"' ? std::string("\"\"") : std::string(1, c);
        out += "\"";
      }
    }
    out += "\n";
  };
  emit(table.header);
  for (const auto &row : table.rows) emit(row);
  return out;
}

}  // namespace tir::fleet
