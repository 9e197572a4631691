#include "compiler/perf/Report.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace tir::perf {
namespace {

double In(const planning::Prediction &p, const char *name, double fallback = 0) {
  auto it = p.inputs.find(name);
  return it == p.inputs.end() ? fallback : it->second;
}

std::string ParamsText(const planning::TileCandidate &c) {
  std::vector<std::string> parts;
  for (const auto &[k, v] : c.params) parts.push_back(absl::StrCat(k, "=", v));
  return absl::StrJoin(parts, " ");
}

Region RegionOf(planning::KernelKind kind) {
  switch (kind) {
    case planning::KernelKind::kPointwise: return Region::kWholeKernel;
    case planning::KernelKind::kReduction: return Region::kRowLoops;
    case planning::KernelKind::kMatmul: return Region::kMatmulEpilogue;
  }
  return Region::kWholeKernel;
}

std::string Seconds(double s) {
  if (s >= 1e-3) return absl::StrFormat("%.3f ms", s * 1e3);
  return absl::StrFormat("%.2f us", s * 1e6);
}

}  // namespace

KernelReport BuildReport(const planning::KernelFacts &f, const planning::TileCandidate &c,
                         const target::ArchInfo &d, const planning::Prediction &p, const Artifact *artifact) {
  KernelReport r;
  r.kind = planning::KernelKindName(f.space.kind);
  r.arch = d.name;
  r.device = d.device;
  r.part = d.part;
  r.candidate = ParamsText(c);
  r.threads = c.threads;
  r.shared_bytes = c.shared_bytes;
  r.registers = c.registers_per_thread;
  if (artifact != nullptr) {
    if (artifact->registers >= 0) r.registers = artifact->registers;
    r.spill_bytes = artifact->spill_bytes;
    r.shared_bytes = std::max(r.shared_bytes, artifact->static_shared_bytes);
  }
  // Blocks an SM holds: threads, shared memory and the registers ptxas used.
  int bps = d.max_blocks_per_sm;
  if (d.is_gpu) {
    bps = std::min(bps, d.max_threads_per_sm / std::max(1, r.threads));
    if (r.shared_bytes > 0) bps = std::min(bps, d.shared_bytes_per_sm / r.shared_bytes);
    const int64_t regs = int64_t{std::max(1, r.registers)} * std::max(1, r.threads);
    bps = static_cast<int>(std::min<int64_t>(bps, d.registers_per_sm / regs));
  }
  r.blocks_per_sm = std::max(0, bps);
  r.occupancy = d.is_gpu ? std::min(1.0, double(r.blocks_per_sm) * r.threads / d.max_threads_per_sm) : 1.0;
  // Parallelism.
  r.sms = d.sm_count;
  r.ctas = c.blocks;
  r.work_units = c.Units();
  const double capacity = std::max(1.0, double(d.sm_count) * std::max(1, r.blocks_per_sm));
  r.waves = std::max(1.0, std::ceil(r.work_units / capacity));
  r.wave_efficiency = r.work_units / (r.waves * capacity);
  r.active_sm_fraction = In(p, "active_sm_fraction", 1);
  // Memory.
  r.bytes = In(p, "bytes");
  r.flops = In(p, "flops");
  r.memory_seconds = In(p, "memory_seconds");
  r.memory_roofline_seconds = r.bytes / (d.dram_gbps * 1e9);
  r.dram_bytes_per_second = r.memory_seconds > 0 ? r.bytes / r.memory_seconds : 0;
  const double perBlock = In(p, "bytes_in_flight_per_block");
  r.bytes_in_flight_per_sm = perBlock * std::max(1, r.blocks_per_sm);
  r.bytes_in_flight_needed_per_sm = d.dram_gbps * 1e9 * d.dram_latency_ns * 1e-9 / std::max(1, d.sm_count);
  // Math at the full machine.
  if (f.space.kind == planning::KernelKind::kMatmul && f.tensor_core && d.is_gpu) {
    const double rate = c.params.count("wgmma") ? d.wgmma_bf16_tflops : f.tf32 ? d.mma_tf32_tflops : d.mma_bf16_tflops;
    r.tensor_seconds = r.flops / (rate * 1e12);
    if (c.params.count("wgmma")) {
      // What the SMs pull from L2 at that rate: a K step loads (block_m +
      // block_n) x 64 operand elements for 2 x block_m x block_n x 64
      // flops, the shared operand's half in a cluster of two.
      auto param = [&](const char *n, double fallback) {
        auto it = c.params.find(n);
        return it == c.params.end() ? fallback : double(it->second);
      };
      const double bm = param("block_m", 128), bn = param("block_n", 128);
      const double perFlop = (bm / param("cluster_n", 1) + bn / param("cluster_m", 1)) * 64.0 * f.operand_bytes /
                             (2.0 * bm * bn * 64.0);
      r.l2_feed_bytes_per_second = rate * 1e12 * perFlop;
      r.l2_feed_limit = d.l2_feed_gbps * 1e9;
    }
  } else {
    r.fp_seconds = r.flops / (d.fp32_tflops * 1e12);
  }
  // The hot path's instructions, per element, against the SM's pipes.
  if (artifact != nullptr && !artifact->ptx.empty()) {
    r.mix = AnalyzePtx(artifact->ptx, RegionOf(f.space.kind));
    const InstructionMix &m = r.mix->region;
    double totalElements = 0, bytesPerElement = 0, regionBytes = 0;
    switch (f.space.kind) {
      case planning::KernelKind::kPointwise:
      case planning::KernelKind::kMatmul:
        totalElements = f.space.kind == planning::KernelKind::kPointwise
                            ? double(f.points)
                            : double(f.space.m) * f.space.n * [&] {
                                double b = 1;
                                for (int64_t x : f.space.batch) b *= x;
                                return b;
                              }();
        bytesPerElement = f.bytes_out / std::max(1.0, totalElements);
        regionBytes = m.global_store_bytes;
        break;
      case planning::KernelKind::kReduction:
        totalElements = double(f.points);
        bytesPerElement = f.bytes_in / std::max(1.0, totalElements);
        regionBytes = m.global_load_bytes;
        break;
    }
    r.elements = bytesPerElement > 0 ? regionBytes / bytesPerElement : 0;
    if (f.space.kind == planning::KernelKind::kMatmul && d.is_gpu) {
      // A thread's accumulators per tile: the epilogue's elements. (Its
      // stores have a vector path and a scalar fallback; both are in the
      // PTX, so stored bytes would overcount them.)
      auto param = [&](const char *n, int64_t fallback) {
        auto it = c.params.find(n);
        return it == c.params.end() ? fallback : it->second;
      };
      const double threads = c.params.count("wgmma") ? 128.0 * param("consumers", 2) : 32.0 * param("warps", 4);
      r.elements = double(param("block_m", 128)) * param("block_n", 128) / threads;
    }
    if (r.elements <= 0) r.elements = 1;
    for (const auto &[cls, n] : m.classes) r.per_element[cls] = n / r.elements;
    // Thread-instructions over the SMs that have work, each pipe at its rate.
    const double sms = std::max(1.0, std::min<double>(d.sm_count, std::ceil(double(r.ctas) / std::max(1, r.blocks_per_sm))));
    const double perSecond = sms * d.clock_ghz * 1e9;
    auto pipe = [&](const char *name, std::initializer_list<const char *> classes, double rate) {
      double n = 0;
      for (const char *cls : classes) {
        auto it = r.per_element.find(cls);
        if (it != r.per_element.end()) n += it->second;
      }
      r.pipe_seconds[name] = n * totalElements / (rate * perSecond);
    };
    pipe("dispatch", {"fma", "fp", "int", "int_div", "mufu", "cvt", "ld_global", "st_global", "shared", "shuffle",
                      "move", "control", "barrier", "other", "param"},
         d.issue.dispatch);
    pipe("fp32", {"fma", "fp"}, d.issue.fp32);
    pipe("int", {"int", "int_div"}, d.issue.int32);
    pipe("mufu", {"mufu"}, d.issue.mufu);
    pipe("cvt", {"cvt"}, d.issue.conversion);
    pipe("lsu", {"ld_global", "st_global", "shared"}, d.issue.lsu);
    for (const auto &[name, s] : r.pipe_seconds) r.issue_seconds = std::max(r.issue_seconds, s);
  }
  // The verdict.
  // A matmul's epilogue runs after its main loop while the tensor cores
  // wait (no ping-pong consumers yet): its issue time adds. Elsewhere the
  // instructions overlap the memory traffic: the larger counts.
  r.predicted_seconds = f.space.kind == planning::KernelKind::kMatmul
                            ? p.seconds + r.issue_seconds
                            : std::max(p.seconds, d.launch_overhead_us * 1e-6 + r.issue_seconds);
  struct Term {
    const char *name;
    double seconds;
  };
  Term best{"memory", r.memory_roofline_seconds};
  for (Term t : {Term{"tensor", r.tensor_seconds}, Term{"fp", r.fp_seconds}, Term{"issue", r.issue_seconds}}) {
    if (t.seconds > best.seconds) best = t;
  }
  r.bound = best.name;
  r.roofline_seconds = best.seconds;
  const double core = r.predicted_seconds - d.launch_overhead_us * 1e-6;
  if (d.is_gpu && r.active_sm_fraction < 0.75 && core > 1.5 * r.roofline_seconds) r.bound = "parallelism";
  r.roofline_fraction = r.predicted_seconds > 0 ? r.roofline_seconds / r.predicted_seconds : 0;
  return r;
}

std::string ReportText(const KernelReport &r) {
  std::string s;
  absl::StrAppendFormat(&s, "  report (%s, %s):\n", r.part, r.arch);
  absl::StrAppendFormat(&s, "    resources: %d threads, %d registers, %d spill bytes, %d B shared; %d block(s)/SM, occupancy %.0f%%\n",
                        r.threads, r.registers, r.spill_bytes, r.shared_bytes, r.blocks_per_sm, r.occupancy * 100);
  absl::StrAppendFormat(&s, "    parallelism: %d CTAs for %d work units on %d SMs: %.0f wave(s), wave efficiency %.0f%%, %.0f%% of SMs busy\n",
                        r.ctas, r.work_units, r.sms, r.waves, r.wave_efficiency * 100,
                        std::min(1.0, r.active_sm_fraction) * 100);
  absl::StrAppendFormat(&s, "    memory: %.3g MB moved, %s at the peak; achieved %.2f TB/s",
                        r.bytes / 1e6, Seconds(r.memory_roofline_seconds), r.dram_bytes_per_second / 1e12);
  if (r.bytes_in_flight_per_sm > 0) {
    absl::StrAppendFormat(&s, "; %.1f KiB in flight per SM, %.1f KiB needed (bandwidth x latency)",
                          r.bytes_in_flight_per_sm / 1024, r.bytes_in_flight_needed_per_sm / 1024);
  }
  s += "\n";
  if (r.tensor_seconds > 0) {
    absl::StrAppendFormat(&s, "    tensor cores: %.3g GFLOP, %s at the peak", r.flops / 1e9, Seconds(r.tensor_seconds));
    if (r.l2_feed_bytes_per_second > 0) {
      absl::StrAppendFormat(&s, "; operands from L2 at that rate %.1f TB/s", r.l2_feed_bytes_per_second / 1e12);
      if (r.l2_feed_limit > 0) {
        absl::StrAppendFormat(&s, ", %.0f%% of the %.0f TB/s feed (a lead)", 100 * r.l2_feed_bytes_per_second / r.l2_feed_limit,
                              r.l2_feed_limit / 1e12);
      }
    }
    s += "\n";
  }
  if (r.fp_seconds > 0) absl::StrAppendFormat(&s, "    fp32: %.3g GFLOP, %s at the peak\n", r.flops / 1e9, Seconds(r.fp_seconds));
  if (r.mix) {
    const InstructionMix &m = r.mix->region;
    std::vector<std::string> classes;
    for (const auto &[cls, n] : r.per_element) {
      if (n >= 0.005) classes.push_back(absl::StrFormat("%s %.2f", cls, n));
    }
    absl::StrAppendFormat(&s, "    %s: %.1f instructions per element (%s)\n", r.mix->region_name,
                          m.Total() / std::max(1.0, r.elements), absl::StrJoin(classes, ", "));
    auto widths = [](const std::map<int, double> &w) {
      std::vector<std::string> parts;
      for (const auto &[bytes, n] : w) parts.push_back(absl::StrFormat("%dB x%.0f", bytes, n));
      return parts.empty() ? std::string("none") : absl::StrJoin(parts, " ");
    };
    absl::StrAppendFormat(&s, "    global accesses: loads %s; stores %s%s%s\n", widths(m.global_loads),
                          widths(m.global_stores), m.software_bf16_rounding ? "; bf16 rounded in software" : "",
                          m.int64_division ? "; 64-bit integer division" : "");
    std::vector<std::string> pipes;
    for (const auto &[name, sec] : r.pipe_seconds) pipes.push_back(absl::StrCat(name, " ", Seconds(sec)));
    absl::StrAppendFormat(&s, "    issue: %s\n", absl::StrJoin(pipes, ", "));
  }
  absl::StrAppendFormat(&s, "    bound: %s; predicted %s, %.0f%% of the %s roofline (%s)\n", r.bound,
                        Seconds(r.predicted_seconds), r.roofline_fraction * 100, r.bound == "parallelism" ? "machine's" : r.bound,
                        Seconds(r.roofline_seconds));
  return s;
}

llvm::json::Value ReportJson(const KernelReport &r) {
  llvm::json::Object o{{"kind", r.kind},
                       {"arch", r.arch},
                       {"device", r.device},
                       {"part", r.part},
                       {"candidate", r.candidate},
                       {"threads", r.threads},
                       {"registers", r.registers},
                       {"spill_bytes", r.spill_bytes},
                       {"shared_bytes", r.shared_bytes},
                       {"blocks_per_sm", r.blocks_per_sm},
                       {"occupancy", r.occupancy},
                       {"ctas", r.ctas},
                       {"work_units", r.work_units},
                       {"sms", r.sms},
                       {"waves", r.waves},
                       {"wave_efficiency", r.wave_efficiency},
                       {"active_sm_fraction", r.active_sm_fraction},
                       {"bytes", r.bytes},
                       {"dram_bytes_per_second", r.dram_bytes_per_second},
                       {"bytes_in_flight_per_sm", r.bytes_in_flight_per_sm},
                       {"bytes_in_flight_needed_per_sm", r.bytes_in_flight_needed_per_sm},
                       {"flops", r.flops},
                       {"memory_seconds", r.memory_seconds},
                       {"memory_roofline_seconds", r.memory_roofline_seconds},
                       {"tensor_seconds", r.tensor_seconds},
                       {"l2_feed_bytes_per_second", r.l2_feed_bytes_per_second},
                       {"fp_seconds", r.fp_seconds},
                       {"issue_seconds", r.issue_seconds},
                       {"predicted_seconds", r.predicted_seconds},
                       {"roofline_seconds", r.roofline_seconds},
                       {"roofline_fraction", r.roofline_fraction},
                       {"bound", r.bound}};
  if (r.mix) {
    const InstructionMix &m = r.mix->region;
    llvm::json::Object per, pipes, loads, stores;
    for (const auto &[cls, n] : r.per_element) per[cls] = n;
    for (const auto &[name, sec] : r.pipe_seconds) pipes[name] = sec;
    for (const auto &[w, n] : m.global_loads) loads[std::to_string(w)] = n;
    for (const auto &[w, n] : m.global_stores) stores[std::to_string(w)] = n;
    o["hot_path"] = llvm::json::Object{{"region", r.mix->region_name},
                                       {"elements_per_execution", r.elements},
                                       {"instructions_per_element", std::move(per)},
                                       {"global_load_widths", std::move(loads)},
                                       {"global_store_widths", std::move(stores)},
                                       {"software_bf16_rounding", m.software_bf16_rounding},
                                       {"int64_division", m.int64_division},
                                       {"pipe_seconds", std::move(pipes)}};
  }
  return llvm::json::Value(std::move(o));
}

}  // namespace tir::perf
