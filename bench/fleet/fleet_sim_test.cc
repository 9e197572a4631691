// The fleet model's mechanics on inputs with known answers: rendezvous
// hashing moves only a lost shard's keys; a coordinator's queue has the
// mean wait queueing theory gives; histogram quantiles; a written PNG is a
// valid PNG (chunk CRCs, header, pixels) decoded independently.

#include <zlib.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench/fleet/calibration.h"
#include "bench/fleet/chart.h"
#include "bench/fleet/fleet_sim.h"
#include "bench/fleet/png_writer.h"
#include "bench/fleet/rendezvous.h"
#include "bench/fleet/stats.h"
#include "gtest/gtest.h"

namespace tir::fleet {
namespace {

TEST(Rendezvous, LosingAShardMovesOnlyItsKeysToTheirNextShard) {
  constexpr int kShards = 8, kLost = 3;
  std::mt19937_64 rng(11);
  std::vector<int> owned(kShards, 0);
  int moved = 0;
  for (int i = 0; i < 20000; ++i) {
    uint64_t key = rng();
    int before = RendezvousOwner(key, kShards);
    int after = RendezvousOwner(key, kShards, uint64_t{1} << kLost);
    ++owned[before];
    if (before != kLost) {
      EXPECT_EQ(after, before) << "key " << key << " moved though its shard is up";
    } else {
      ++moved;
      EXPECT_EQ(after, RendezvousOrder(key, kShards)[1]) << "key " << key << " did not fall to its next shard";
    }
  }
  EXPECT_EQ(moved, owned[kLost]);
  // Balanced: each shard within 10% of an eighth.
  for (int s = 0; s < kShards; ++s) EXPECT_NEAR(owned[s], 20000 / kShards, 250) << "shard " << s;
}

TEST(LogHistogram, QuantilesOfAUniformSample) {
  LogHistogram h;
  for (int i = 1; i <= 100000; ++i) h.Add(i * 1e-5);  // 10 us .. 1 s
  EXPECT_NEAR(h.Quantile(0.5), 0.5, 0.5 * 0.012);
  EXPECT_NEAR(h.Quantile(0.99), 0.99, 0.99 * 0.012);
  EXPECT_NEAR(h.mean(), 0.500005, 1e-6);
}

TEST(LogHistogram, ZerosAreZero) {
  LogHistogram h;
  h.Add(0, 60);
  h.Add(2.0, 40);
  EXPECT_EQ(h.Quantile(0.5), 0);
  EXPECT_NEAR(h.Quantile(0.99), 2.0, 2.0 * 0.012);
}

// One shard, one server (the measured rate and latency chosen so), Poisson
// requests straight to the fleet, no network time: an M/G/1 queue, whose
// mean time in system is E[S] + lambda E[S^2] / (2 (1 - rho))
// (Pollaczek-Khinchine) with the lognormal service time.
TEST(FleetSim, CoordinatorQueueMatchesPollaczekKhinchine) {
  Calibration cal = DefaultCalibration();
  Costs &c = cal.costs;
  c.host_hit_p50_s = 1e-3;
  c.host_hit_p99_s = 2e-3;
  c.host_fleet_rtt_s = c.fleet_rtt_s = 0;
  const double sigma = std::log(2.0) / 2.326;
  const double mean_s = 1e-3 * std::exp(sigma * sigma / 2);
  const double second_moment = 1e-6 * std::exp(2 * sigma * sigma);
  c.shard_hits_per_s = 1 / mean_s;
  FleetShape &f = cal.shape;
  f.hosts = 10;
  f.models = 1;
  f.graphs_min = f.graphs_max = 1;
  f.arch_share = {1.0};
  const double rho = 0.7;
  const double lambda = rho / mean_s;
  f.processes = 100000;
  f.process_lifetime_s = f.processes / lambda;

  RunSpec spec;
  spec.name = "m/g/1";
  spec.shards = 1;
  spec.host_tier = HostTier::kNone;
  spec.arrivals = Arrivals::kSteady;
  spec.window_s = 600;
  spec.horizon_s = 700;
  RunResult r = RunFleet(cal, spec);
  ASSERT_EQ(r.servers_per_shard, 1);
  ASSERT_GT(r.fleet_latency.count(), 350000u);
  EXPECT_EQ(r.fleet_hits, r.fleet_requests);
  const double expected = mean_s + lambda * second_moment / (2 * (1 - rho));
  EXPECT_NEAR(r.fleet_latency.mean(), expected, expected * 0.03)
      << "simulated mean time in system " << r.fleet_latency.mean() << " s, theory " << expected << " s";
}

// A shard lost in a cold restart: only keys it had stored are tuned again,
// and with the other shards' keys untouched every re-tuned key was its.
TEST(FleetSim, LosingAShardRetunesOnlyItsKeys) {
  Calibration cal = QuickCalibration();
  cal.shape.hosts = 20;
  cal.shape.processes = 4000;
  cal.shape.models = 10;
  RunSpec spec;
  spec.name = "loss";
  spec.shards = 4;
  spec.host_tier = HostTier::kCold;
  spec.arrivals = Arrivals::kRestart;
  spec.window_s = cal.shape.restart_ramp_s;
  spec.horizon_s = spec.window_s + 3600;
  spec.lose_shard = 2;
  spec.lose_at_s = 1;
  RunResult lost = RunFleet(cal, spec);
  spec.lose_shard = -1;
  RunResult intact = RunFleet(cal, spec);
  EXPECT_EQ(intact.jobs, 0u) << "a fleet that stores every key tuned something";
  EXPECT_GT(lost.retuned_keys, 0u);
  EXPECT_EQ(lost.jobs, lost.retuned_keys) << "a key the lost shard did not own was tuned";
  EXPECT_GT(lost.retune_gpu_seconds, 0);
  EXPECT_GE(lost.retune_last_done_s, 0);
}

// With warm host tiers most lookups are host hits: every lookup has a
// latency, and the median is the measured host-tier hit's.
TEST(FleetSim, WarmHostsAnswerAtTheMeasuredHitLatency) {
  Calibration cal = QuickCalibration();
  cal.shape.hosts = 20;
  cal.shape.processes = 4000;
  cal.shape.models = 300;  // a long tail: some lookups miss the host
  RunSpec spec;
  spec.name = "warm";
  spec.shards = 2;
  spec.host_tier = HostTier::kWarm;
  spec.arrivals = Arrivals::kSteady;
  spec.window_s = 600;
  spec.horizon_s = 700;
  RunResult r = RunFleet(cal, spec);
  ASSERT_GT(r.lookups, 10000u);
  EXPECT_GT(r.host_hits, r.lookups / 2);
  ASSERT_GT(r.fleet_latency.count(), 0u);
  EXPECT_EQ(r.lookup_latency.count(), r.lookups);
  EXPECT_NEAR(r.lookup_latency.Quantile(0.5), cal.costs.host_hit_p50_s, cal.costs.host_hit_p50_s * 0.02);
  EXPECT_GT(r.fleet_latency.Quantile(0.5), cal.costs.host_fleet_rtt_s) << "a fleet answer faster than its round trip";
}

// Through any coordinator, a request for a key another shard owns is
// forwarded (3 in 4 with 4 shards); sent to the owner, none is.
TEST(FleetSim, RoutingToTheOwnerNeverForwards) {
  Calibration cal = QuickCalibration();
  cal.shape.hosts = 20;
  cal.shape.processes = 2000;
  cal.shape.models = 10;
  RunSpec spec;
  spec.name = "routing";
  spec.shards = 4;
  spec.host_tier = HostTier::kNone;
  spec.arrivals = Arrivals::kRestart;
  spec.window_s = cal.shape.restart_ramp_s;
  spec.horizon_s = spec.window_s + 60;
  RunResult any = RunFleet(cal, spec);
  spec.route_to_owner = true;
  RunResult owner = RunFleet(cal, spec);
  ASSERT_GT(any.fleet_requests, 10000u);
  EXPECT_NEAR(static_cast<double>(any.forwards) / any.fleet_requests, 0.75, 0.03);
  EXPECT_EQ(owner.forwards, 0u);
  EXPECT_EQ(owner.fleet_hits, owner.fleet_requests);
}

// CRC-32 (ISO 3309, as PNG uses), bit by bit: independent of zlib's table.
uint32_t Crc32(const std::string &bytes) {
  uint32_t crc = 0xffffffffu;
  for (unsigned char b : bytes) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = crc & 1 ? (crc >> 1) ^ 0xedb88320u : crc >> 1;
  }
  return crc ^ 0xffffffffu;
}

uint32_t ReadU32(const std::string &s, size_t at) {
  return static_cast<uint32_t>(static_cast<unsigned char>(s[at])) << 24 |
         static_cast<uint32_t>(static_cast<unsigned char>(s[at + 1])) << 16 |
         static_cast<uint32_t>(static_cast<unsigned char>(s[at + 2])) << 8 |
         static_cast<uint32_t>(static_cast<unsigned char>(s[at + 3]));
}

TEST(Png, EncodesAValidFileWithThePixels) {
  Image image(37, 23);
  for (int y = 0; y < 23; ++y) {
    for (int x = 0; x < 37; ++x) image.Set(x, y, Rgb{uint8_t(x * 7), uint8_t(y * 11), uint8_t(x ^ y)});
  }
  std::string png = EncodePng(image);
  ASSERT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  std::vector<std::string> types;
  std::string header, idat;
  for (size_t at = 8; at < png.size();) {
    ASSERT_LE(at + 12, png.size()) << "a truncated chunk";
    uint32_t length = ReadU32(png, at);
    std::string type = png.substr(at + 4, 4);
    std::string data = png.substr(at + 8, length);
    EXPECT_EQ(ReadU32(png, at + 8 + length), Crc32(type + data)) << "bad CRC in " << type;
    types.push_back(type);
    if (type == "IHDR") header = data;
    if (type == "IDAT") idat += data;
    at += 12 + length;
  }
  EXPECT_EQ(types.front(), "IHDR");
  EXPECT_EQ(types.back(), "IEND");
  ASSERT_EQ(header.size(), 13u);
  EXPECT_EQ(ReadU32(header, 0), 37u);
  EXPECT_EQ(ReadU32(header, 4), 23u);
  EXPECT_EQ(header[8], 8);  // bit depth
  EXPECT_EQ(header[9], 2);  // truecolor

  std::string raw(23 * (1 + 3 * 37), '\0');
  uLongf size = raw.size();
  ASSERT_EQ(uncompress(reinterpret_cast<Bytef *>(raw.data()), &size, reinterpret_cast<const Bytef *>(idat.data()),
                       idat.size()),
            Z_OK);
  ASSERT_EQ(size, raw.size());
  for (int y = 0; y < 23; ++y) {
    const char *row = raw.data() + y * (1 + 3 * 37);
    ASSERT_EQ(row[0], 0) << "row " << y << " filter";
    EXPECT_EQ(std::memcmp(row + 1, image.rgb().data() + y * 3 * 37, 3 * 37), 0) << "row " << y << " pixels";
  }
}

TEST(Chart, DrawsItsSeriesAndLabels) {
  LineChart chart;
  chart.title = "T";
  chart.series.push_back(Series{"a", {0, 1, 2}, {0, 5, 10}, Rgb{10, 200, 30}});
  Image image = RenderLineChart(chart, 400, 300);
  int series_pixels = 0, dark_pixels = 0;
  for (int y = 0; y < image.height(); ++y) {
    for (int x = 0; x < image.width(); ++x) {
      Rgb p = image.Get(x, y);
      series_pixels += p.r == 10 && p.g == 200 && p.b == 30;
      dark_pixels += p.r == 0 && p.g == 0 && p.b == 0;
    }
  }
  EXPECT_GT(series_pixels, 200) << "the series' line is missing";
  EXPECT_GT(dark_pixels, 500) << "axes and labels are missing";
}

}  // namespace
}  // namespace tir::fleet
