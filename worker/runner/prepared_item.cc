#include "worker/runner/prepared_item.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "compiler/codegen/Emitter.h"
#include "compiler/codegen/LaunchContract.h"
#include "compiler/ir/Registration.h"
#include "compiler/reference/Interpreter.h"
#include "compiler/support/status.h"

namespace tir::runner {
namespace {

absl::Status InvalidWork(const std::string &m) {
  return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_WORK", m);
}

std::string &ReferenceDir() {
  static std::string dir;
  return dir;
}

// Files kept in the reference cache, and the largest one written.
constexpr int kReferenceFiles = 8;
constexpr uint64_t kReferenceMaxBytes = uint64_t{1} << 30;
constexpr char kReferenceMagic[8] = {'T', 'I', 'R', 'R', 'E', 'F', '0', '2'};

// What the inputs and reference depend on: the kernel graph, the seed and
// the shapes (FNV-1a, 64 bits, over their bytes).
std::string ReferenceKey(const tir::v1::WorkItem &item, uint64_t seed) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const std::string &bytes) {
    for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
  };
  mix(item.kernel_mlir());
  mix(std::to_string(seed));
  for (const tir::v1::ShapeHint &s : item.shapes()) mix(s.SerializeAsString());
  return absl::StrFormat("%016x-%zu.ref", h, item.kernel_mlir().size());
}

template <typename T>
void Put(std::string &out, const T &v) {
  out.append(reinterpret_cast<const char *>(&v), sizeof(T));
}

template <typename T>
bool Take(const std::string &in, size_t &at, T *v) {
  if (at + sizeof(T) > in.size()) return false;
  std::memcpy(v, in.data() + at, sizeof(T));
  at += sizeof(T);
  return true;
}

void PutTensors(std::string &out, const std::vector<reference::Tensor> &ts) {
  Put(out, static_cast<uint64_t>(ts.size()));
  for (const reference::Tensor &t : ts) {
    Put(out, static_cast<int32_t>(t.dtype));
    Put(out, static_cast<uint8_t>(t.scalar));
    Put(out, static_cast<uint64_t>(t.shape.size()));
    for (int64_t d : t.shape) Put(out, d);
    Put(out, static_cast<uint64_t>(t.f.size()));
    out.append(reinterpret_cast<const char *>(t.f.data()), t.f.size() * sizeof(double));
    Put(out, static_cast<uint64_t>(t.i.size()));
    out.append(reinterpret_cast<const char *>(t.i.data()), t.i.size() * sizeof(int64_t));
  }
}

bool TakeTensors(const std::string &in, size_t &at, std::vector<reference::Tensor> *ts) {
  uint64_t n = 0;
  if (!Take(in, at, &n) || n > 4096) return false;
  ts->resize(n);
  for (reference::Tensor &t : *ts) {
    int32_t dtype = 0;
    uint8_t scalar = 0;
    uint64_t rank = 0, nf = 0, ni = 0;
    if (!Take(in, at, &dtype) || !Take(in, at, &scalar) || !Take(in, at, &rank) || rank > 16) return false;
    t.dtype = static_cast<reference::DType>(dtype);
    t.scalar = scalar != 0;
    t.shape.resize(rank);
    for (int64_t &d : t.shape) {
      if (!Take(in, at, &d)) return false;
    }
    if (!Take(in, at, &nf) || nf > (in.size() - at) / sizeof(double)) return false;
    t.f.resize(nf);
    std::memcpy(t.f.data(), in.data() + at, nf * sizeof(double));
    at += nf * sizeof(double);
    if (!Take(in, at, &ni) || ni > (in.size() - at) / sizeof(int64_t)) return false;
    t.i.resize(ni);
    std::memcpy(t.i.data(), in.data() + at, ni * sizeof(int64_t));
    at += ni * sizeof(int64_t);
    const uint64_t elements = static_cast<uint64_t>(t.NumElements());
    if ((t.UsesInts() ? ni : nf) != elements) return false;
  }
  return true;
}

// Reads a cached reference; false when there is none or it does not parse
// (then it is computed again and rewritten).
bool LoadReference(const std::string &path, PreparedItem *p) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  const std::string in((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (in.size() < sizeof(kReferenceMagic) || std::memcmp(in.data(), kReferenceMagic, sizeof(kReferenceMagic)) != 0) {
    return false;
  }
  size_t at = sizeof(kReferenceMagic);
  std::vector<reference::Tensor> inputs, expected, rounding;
  if (!TakeTensors(in, at, &inputs) || !TakeTensors(in, at, &expected) || !TakeTensors(in, at, &rounding) ||
      at != in.size() || rounding.size() != expected.size()) {
    return false;
  }
  if (inputs.size() != p->inputs.size()) return false;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].dtype != p->inputs[k].dtype || inputs[k].shape != p->inputs[k].shape) return false;
  }
  p->inputs = std::move(inputs);
  p->expected = std::move(expected);
  p->rounding = std::move(rounding);
  return true;
}

void StoreReference(const std::string &dir, const std::string &path, const PreparedItem &p) {
  std::string out(kReferenceMagic, sizeof(kReferenceMagic));
  PutTensors(out, p.inputs);
  if (out.size() > kReferenceMaxBytes) return;
  PutTensors(out, p.expected);
  PutTensors(out, p.rounding);
  if (out.size() > kReferenceMaxBytes) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  // The newest files stay; written through a temporary name so a reader
  // never sees half a file.
  std::vector<std::pair<std::filesystem::file_time_type, std::filesystem::path>> files;
  for (const auto &e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".ref") files.emplace_back(e.last_write_time(ec), e.path());
  }
  std::sort(files.begin(), files.end());
  for (size_t k = 0; k + kReferenceFiles <= files.size(); ++k) std::filesystem::remove(files[k].second, ec);
  const std::string tmp = absl::StrCat(path, ".tmp", getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(out.data(), static_cast<std::streamsize>(out.size()));
    if (!f) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, path, ec);
}

}  // namespace

void SetReferenceCacheDir(std::string dir) { ReferenceDir() = std::move(dir); }

absl::StatusOr<std::unique_ptr<PreparedItem>> PrepareItem(const tir::v1::WorkItem &item) {
  auto p = std::make_unique<PreparedItem>();
  p->item = item;
  p->context = makeTirContext();
  if (item.kernel_mlir().empty()) return InvalidWork("the work item has no kernel graph");
  TIR_ASSIGN_OR_RETURN(p->loaded, LoadGraphText(item.kernel_mlir(), p->context.get(), "kernel.mlir"));
  GraphOp kernel = p->loaded.graph;
  // The Hopper matmul form adds tensor maps: every candidate of an item is
  // of one form (the planner offers wgmma candidates alone on sm_90a).
  std::map<std::string, int64_t> form;
  for (const tir::v1::CandidateWork &c : item.candidates()) {
    const bool wgmma = c.candidate().params().count("wgmma") > 0 && c.candidate().params().at("wgmma") != 0;
    if (&c == &item.candidates(0)) {
      if (wgmma) form["wgmma"] = 1;
    } else if (wgmma != (form.count("wgmma") > 0)) {
      return InvalidWork("the work item mixes wgmma and other matmul candidates (their arguments differ)");
    }
  }
  TIR_ASSIGN_OR_RETURN(p->field_names, codegen::ArgumentFieldNames(kernel, form));
  const uint64_t seed = item.policy().seed() ? item.policy().seed() : 1;
  TIR_RETURN_IF_ERROR(reference::CheckVerificationFits(kernel, 1));
  p->inputs = reference::SampleInputs(kernel, 1, seed);
  std::vector<bool> hinted(p->inputs.size(), false);
  std::map<uint32_t, std::vector<int64_t>> hintedShapes;  // made once they are known to fit
  mlir::Block &args = kernel.getBodyBlock();
  for (const tir::v1::ShapeHint &h : item.shapes()) {
    if (h.input() >= p->inputs.size()) return InvalidWork(absl::StrCat("shape hint for input ", h.input(), " of ", p->inputs.size()));
    if (args.getArgument(h.input()).getType().isIndex()) {
      // An index input's value (a dynamic_dims operand).
      if (h.shape_size() != 1 || h.shape(0) < 0 || h.shape(0) > (int64_t{1} << 40)) {
        return InvalidWork(absl::StrCat("the hint for index input ", h.input(), " is not one value in range"));
      }
      p->inputs[h.input()] = reference::Tensor::ScalarInt(p->inputs[h.input()].dtype, h.shape(0));
      hinted[h.input()] = true;
      continue;
    }
    if (p->inputs[h.input()].scalar) {
      return InvalidWork(absl::StrCat("shape hint for input ", h.input(), " which is not a tensor input"));
    }
    std::vector<int64_t> shape(h.shape().begin(), h.shape().end());
    for (int64_t d : shape) {
      if (d < 0 || d > (int64_t{1} << 32)) return InvalidWork(absl::StrCat("shape hint extent ", d, " is out of range"));
    }
    hintedShapes[h.input()] = std::move(shape);
    hinted[h.input()] = true;
  }
  mlir::Block &block = kernel.getBodyBlock();
  for (mlir::BlockArgument arg : block.getArguments()) {
    auto type = arg.getType().dyn_cast<mlir::RankedTensorType>();
    if (type && !type.hasStaticShape() && !hinted[arg.getArgNumber()]) {
      return InvalidWork(absl::StrCat("input ", arg.getArgNumber(), " has dynamic dims and no shape hint"));
    }
  }
  if (!item.shapes().empty()) {
    // The reference at the hinted sizes must fit, as at the sample ones,
    // before a tensor of them is made.
    std::vector<std::vector<int64_t>> sizes;
    for (size_t i = 0; i < p->inputs.size(); ++i) {
      const reference::Tensor &t = p->inputs[i];
      auto h = hintedShapes.find(static_cast<uint32_t>(i));
      sizes.push_back(h != hintedShapes.end() ? h->second : t.scalar ? std::vector<int64_t>{t.GetI(0)} : t.shape);
    }
    TIR_RETURN_IF_ERROR(reference::CheckVerificationFitsAt(kernel, sizes));
    for (auto &[i, shape] : hintedShapes) p->inputs[i] = reference::RandomTensor(p->inputs[i].dtype, shape, seed + i);
    reference::FitGatherIndices(kernel, p->inputs, seed);
  }
  const std::string dir = ReferenceDir();
  const std::string path = dir.empty() ? "" : dir + "/" + ReferenceKey(item, seed);
  if (!path.empty() && LoadReference(path, p.get())) {
    p->reference_cached = true;
    return p;
  }
  TIR_ASSIGN_OR_RETURN(reference::Reference ref, reference::EvaluateWithRounding(kernel, p->inputs));
  p->expected = codegen::AsStoredOutputs(kernel, std::move(ref.outputs));  // a stride-0 output dim stores index 0 only
  p->rounding = codegen::AsStoredOutputs(kernel, std::move(ref.rounding));
  if (!path.empty()) StoreReference(dir, path, *p);
  return p;
}

absl::StatusOr<const tir::v1::CandidateWork *> CandidateAt(const PreparedItem *prepared, uint32_t position) {
  if (prepared == nullptr) return MakeError(absl::StatusCode::kFailedPrecondition, "NO_ITEM", "no work item is prepared");
  if (position >= static_cast<uint32_t>(prepared->item.candidates_size())) {
    return InvalidWork(absl::StrCat("no candidate ", position));
  }
  return &prepared->item.candidates(position);
}

TimedRuns TimedRunsOf(const tir::v1::MeasurementPolicy &policy, int default_min_runs) {
  TimedRuns t;
  t.min_runs = policy.min_runs() ? static_cast<int>(policy.min_runs()) : default_min_runs;
  t.budget_seconds = policy.has_time_budget() ? policy.time_budget().seconds() + policy.time_budget().nanos() * 1e-9 : 0.05;
  return t;
}

tir::v1::Verification Verify(const std::vector<reference::Tensor> &got, const std::vector<reference::Tensor> &want,
                             const std::vector<reference::Tensor> &rounding, int64_t reduction_length,
                             bool tf32_operands) {
  tir::v1::Verification v;
  v.set_verdict(tir::v1::VERDICT_PASSED);
  if (got.size() != want.size()) {
    v.set_verdict(tir::v1::VERDICT_WRONG);
    v.set_relative_l2_error(INFINITY);
    v.set_detail(absl::StrCat(got.size(), " outputs, the reference has ", want.size()));
    return v;
  }
  double worst = 0, tolerance = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const reference::OutputCheck check = reference::CheckOutput(
        got[i], want[i], i < rounding.size() ? rounding[i] : reference::NoRounding(), reduction_length, tf32_operands);
    const double err = check.error, bound = check.bound;
    if (i == 0 || err > worst || std::isnan(err)) {
      worst = std::isnan(err) ? INFINITY : err;
      tolerance = bound;
    }
    if (!(err <= bound)) {
      v.set_verdict(tir::v1::VERDICT_WRONG);
      absl::StrAppendFormat(v.mutable_detail(), "%soutput %d: relative L2 error %.3g over the bound %.3g",
                            v.detail().empty() ? "" : "; ", i, err, bound);
    }
  }
  v.set_relative_l2_error(worst);
  v.set_tolerance(tolerance);
  return v;
}

}  // namespace tir::runner
