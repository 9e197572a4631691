#include "compiler/codegen/HostBuild.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "compiler/ir/StrideAttr.h"
#include "compiler/reference/Interpreter.h"
#include "compiler/support/status.h"
#include "llvm/Support/SHA256.h"

namespace tir::codegen {
namespace {

absl::Status Invalid(const std::string &m) { return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_ARGUMENT", m); }

std::string Hex(llvm::StringRef data) {
  std::array<uint8_t, 32> d = llvm::SHA256::hash(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(data.data()), data.size()));
  static const char *kHex = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < 12; ++i) {
    s.push_back(kHex[d[i] >> 4]);
    s.push_back(kHex[d[i] & 15]);
  }
  return s;
}

std::vector<int64_t> RowMajor(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * shape[d + 1];
  return s;
}

}  // namespace

HostKernel::~HostKernel() {
  if (handle_ != nullptr) dlclose(handle_);
}

absl::StatusOr<std::unique_ptr<HostKernel>> BuildHostKernel(const EmittedKernel &kernel, const std::string &work_dir) {
  const std::string id = Hex(kernel.source);
  const std::filesystem::path dir = std::filesystem::path(work_dir) / id;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return MakeError(absl::StatusCode::kInternal, "INTERNAL", "cannot create " + dir.string() + ": " + ec.message());
  const std::string src = (dir / "kernel.cc").string(), so = (dir / "kernel.so").string(),
                    log = (dir / "compile.log").string();
  if (!std::filesystem::exists(so)) {
    std::ofstream(dir / "tir_runtime.h") << RuntimeHeader();
    std::ofstream(src) << kernel.source;
    const char *cxx = std::getenv("TIR_HOST_CXX");
    const std::string cmd = absl::StrCat(cxx && *cxx ? cxx : "c++", " -std=c++17 -O1 -fPIC -shared -w -I", dir.string(),
                                         " -o ", so, ".tmp ", src, " > ", log, " 2>&1 && mv ", so, ".tmp ", so);
    if (std::system(cmd.c_str()) != 0) {
      std::ifstream in(log);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      return MakeError(absl::StatusCode::kInvalidArgument, "HOST_COMPILE_FAILED",
                       absl::StrCat("the system compiler rejected generated kernel ", src, ":\n", text.substr(0, 4000)));
    }
  }
  void *handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return MakeError(absl::StatusCode::kInternal, "INTERNAL", absl::StrCat("dlopen ", so, ": ", dlerror()));
  auto call = reinterpret_cast<HostKernel::CallFn>(dlsym(handle, "tir_host_call"));
  if (call == nullptr) {
    dlclose(handle);
    return MakeError(absl::StatusCode::kInternal, "INTERNAL", so + " has no tir_host_call");
  }
  return std::make_unique<HostKernel>(handle, call, so);
}

absl::StatusOr<std::vector<reference::Tensor>> RunOnHost(GraphOp kernel, const EmittedKernel &emitted,
                                                         const HostKernel &built,
                                                         const std::vector<reference::Tensor> &inputs) {
  mlir::Block &block = kernel.getBodyBlock();
  if (inputs.size() != block.getNumArguments()) {
    return Invalid(absl::StrCat("kernel takes ", block.getNumArguments(), " inputs, got ", inputs.size()));
  }
  // The iteration domain: static extents, dynamic ones from an input read at d_k.
  auto domainAttr = kernel->getAttrOfType<mlir::DenseI64ArrayAttr>("tir.iteration_domain").asArrayRef();
  std::vector<int64_t> domain(domainAttr.begin(), domainAttr.end());
  for (size_t d = 0; d < domain.size(); ++d) {
    if (domain[d] >= 0) continue;
    // A concatenation spans the sum of its inputs' extents (each input alone
    // reads only part of the dimension, so this comes first).
    kernel.walk([&](ConcatenateOp cat) {
      auto map = cat->getAttrOfType<mlir::AffineMapAttr>("tir.access");
      if (domain[d] >= 0 || !map) return;
      auto e = map.getValue().getResult(cat.getDimension()).dyn_cast<mlir::AffineDimExpr>();
      if (!e || e.getPosition() != d) return;
      int64_t sum = 0;
      for (mlir::Value v : cat.getInputs()) {
        const int64_t ext = v.getType().cast<mlir::RankedTensorType>().getDimSize(cat.getDimension());
        auto arg = v.dyn_cast<mlir::BlockArgument>();
        if (!mlir::ShapedType::isDynamic(ext)) sum += ext;
        else if (arg && arg.getOwner() == &block) sum += inputs[arg.getArgNumber()].shape[cat.getDimension()];
        else return;
      }
      domain[d] = sum;
    });
    if (domain[d] >= 0) continue;
    for (mlir::BlockArgument arg : block.getArguments()) {
      auto map = kernel.getArgAttrOfType<mlir::AffineMapAttr>(arg.getArgNumber(), "tir.iter_space_map");
      if (!map) continue;
      for (unsigned j = 0; j < map.getValue().getNumResults(); ++j) {
        auto e = map.getValue().getResult(j).dyn_cast<mlir::AffineDimExpr>();
        if (e && e.getPosition() == d) domain[d] = inputs[arg.getArgNumber()].shape[j];
      }
    }
    // Else from a dynamic_dims operand that is an index argument.
    kernel.walk([&](mlir::Operation *op) {
      if (domain[d] >= 0 || !llvm::isa<SplatOp, IotaOp, BroadcastOp, ReshapeOp>(op)) return;
      auto map = op->getAttrOfType<mlir::AffineMapAttr>("tir.access");
      auto type = op->getResult(0).getType().cast<mlir::RankedTensorType>();
      mlir::OperandRange dims = op->getOperands().drop_front(llvm::isa<SplatOp, BroadcastOp, ReshapeOp>(op) ? 1 : 0);
      if (!map || dims.empty()) return;
      unsigned next = 0;
      for (int64_t j = 0; j < type.getRank(); ++j) {
        if (!type.isDynamicDim(j)) continue;
        mlir::Value v = dims[next++];
        auto e = map.getValue().getResult(j).dyn_cast<mlir::AffineDimExpr>();
        if (!e || e.getPosition() != d) continue;
        if (auto arg = v.dyn_cast<mlir::BlockArgument>(); arg && arg.getOwner() == &block) {
          domain[d] = inputs[arg.getArgNumber()].GetI(0);
        } else if (auto dimOp = v.getDefiningOp<DimOp>()) {
          if (auto src = dimOp.getInput().dyn_cast<mlir::BlockArgument>(); src && src.getOwner() == &block) {
            domain[d] = inputs[src.getArgNumber()].shape[dimOp.getDimension()];
          }
        }
      }
    });
    if (domain[d] < 0) return Invalid(absl::StrCat("cannot resolve dynamic extent ", d, " of the iteration domain"));
  }
  // Storage for every field, then pointers to them in field order.
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<void *> pointers;
  std::vector<std::vector<int64_t>> arrays;
  std::vector<std::array<uint8_t, 8>> scalars;
  buffers.reserve(64);
  arrays.reserve(64);
  scalars.reserve(64);
  pointers.reserve(64);
  std::vector<void *> fields;
  std::vector<std::vector<int64_t>> inStrides(inputs.size());
  for (mlir::BlockArgument arg : block.getArguments()) {
    const reference::Tensor &t = inputs[arg.getArgNumber()];
    if (auto s = kernel.getArgAttrOfType<mlir::StringAttr>(arg.getArgNumber(), "tir.stride")) {
      auto parsed = parseStrideString(s.getValue(), nullptr);
      if (parsed && llvm::none_of(*parsed, [](int64_t v) { return mlir::ShapedType::isDynamic(v); })) {
        inStrides[arg.getArgNumber()].assign(parsed->begin(), parsed->end());
      }
    }
    if (inStrides[arg.getArgNumber()].empty()) inStrides[arg.getArgNumber()] = RowMajor(t.shape);
  }
  auto results = llvm::cast<ResultsOp>(block.getTerminator());
  std::vector<std::vector<int64_t>> outShapes;
  for (mlir::Value v : results.getValues()) {
    auto type = v.getType().cast<mlir::RankedTensorType>();
    std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
    for (size_t j = 0; j < shape.size(); ++j) {
      if (!mlir::ShapedType::isDynamic(shape[j])) continue;
      // The output's natural map reads domain dim j when ranks agree.
      shape[j] = j < domain.size() ? domain[j] : 1;
    }
    outShapes.push_back(shape);
  }
  std::vector<size_t> outBuffer(results.getValues().size());
  for (const std::string &name : emitted.field_names) {
    if (name == "dim") {
      arrays.push_back(domain);
      fields.push_back(arrays.back().data());
    } else if (name.rfind("out", 0) == 0 && name.find("_stride") != std::string::npos) {
      const int i = std::stoi(name.substr(3));
      arrays.push_back(RowMajor(outShapes[i]));
      fields.push_back(arrays.back().data());
    } else if (name.rfind("out", 0) == 0) {
      const int i = std::stoi(name.substr(3));
      mlir::Type e = results.getValues()[i].getType().cast<mlir::ShapedType>().getElementType();
      const reference::DType dt = reference::DTypeOf(e);
      buffers.emplace_back(std::max<int64_t>(1, reference::BufferBytes(dt, outShapes[i], {})), 0xff);  // poison
      outBuffer[i] = buffers.size() - 1;
      pointers.push_back(buffers.back().data());
      fields.push_back(&pointers.back());
    } else if (name.find("_size") != std::string::npos) {
      arrays.push_back(inputs[std::stoi(name.substr(2))].shape);
      if (arrays.back().empty()) arrays.back().push_back(1);
      fields.push_back(arrays.back().data());
    } else if (name.find("_stride") != std::string::npos) {
      arrays.push_back(inStrides[std::stoi(name.substr(2))]);
      if (arrays.back().empty()) arrays.back().push_back(1);
      fields.push_back(arrays.back().data());
    } else {  // inN
      const int i = std::stoi(name.substr(2));
      const reference::Tensor &t = inputs[i];
      if (t.scalar) {
        std::array<uint8_t, 8> bytes{};
        reference::ToBuffer(t, {}, bytes.data());
        scalars.push_back(bytes);
        fields.push_back(scalars.back().data());
      } else {
        buffers.emplace_back(std::max<int64_t>(1, reference::BufferBytes(t.dtype, t.shape, inStrides[i])), 0);
        reference::ToBuffer(t, inStrides[i], buffers.back().data());
        pointers.push_back(buffers.back().data());
        fields.push_back(&pointers.back());
      }
    }
  }
  // Grid extents from the launch rule.
  unsigned grid[3] = {1, 1, 1};
  for (int g = 0; g < emitted.launch.grid_size() && g < 3; ++g) {
    const auto &ext = emitted.launch.grid(g);
    int64_t v = ext.constant() ? ext.constant() : 1;
    for (const auto &d : ext.dims()) v *= domain[d.dim()];
    const int64_t div = ext.divisor() > 1 ? ext.divisor() : 1;
    grid[g] = static_cast<unsigned>(std::max<int64_t>(1, (v + div - 1) / div));
  }
  built.Call(fields.data(), grid[0], grid[1], grid[2]);
  std::vector<reference::Tensor> out;
  for (size_t i = 0; i < outShapes.size(); ++i) {
    mlir::Type e = results.getValues()[i].getType().cast<mlir::ShapedType>().getElementType();
    out.push_back(reference::FromBuffer(reference::DTypeOf(e), outShapes[i], {}, buffers[outBuffer[i]].data()));
  }
  return out;
}

}  // namespace tir::codegen
