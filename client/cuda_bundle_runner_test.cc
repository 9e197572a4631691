// The CUDA runner's launch records on the CPU: the fields a kernel's
// parameter struct is packed from, their offsets, and the checks made before
// any module is loaded. On a machine without a GPU, Load reports the driver
// missing; the launch itself needs a GPU.

#include "client/cuda_bundle_runner.h"

#include "compiler/support/digest.h"

#include "client/bundle_runner.h"
#include "client/bundle_signature.h"
#include "compiler/support/status.h"
#include "gtest/gtest.h"

namespace tir::client {
namespace {

using tir::v1::KernelArgument;
using tir::v1::TensorRef;

void Arg(tir::v1::KernelEntry &k, KernelArgument::Kind kind, TensorRef::Kind tensor, uint32_t index, uint32_t dim = 0) {
  KernelArgument *a = k.add_arguments();
  a->set_kind(kind);
  a->mutable_tensor()->set_kind(tensor);
  a->mutable_tensor()->set_index(index);
  a->set_dim(dim);
}

TEST(CudaParams, FieldsFollowTheArgumentRecords) {
  tir::v1::KernelEntry k;
  k.add_iteration_domain(96);
  k.add_iteration_domain(64);
  Arg(k, KernelArgument::POINTER, TensorRef::INPUT, 0);
  Arg(k, KernelArgument::SIZE, TensorRef::INPUT, 0, 0);
  Arg(k, KernelArgument::SIZE, TensorRef::INPUT, 0, 1);
  Arg(k, KernelArgument::STRIDE, TensorRef::INPUT, 0, 0);
  Arg(k, KernelArgument::STRIDE, TensorRef::INPUT, 0, 1);
  Arg(k, KernelArgument::SCALAR, TensorRef::INPUT, 1);
  Arg(k, KernelArgument::SIZE, TensorRef::ITERATION_DOMAIN, 0, 0);
  Arg(k, KernelArgument::SIZE, TensorRef::ITERATION_DOMAIN, 0, 1);
  Arg(k, KernelArgument::WORKSPACE, TensorRef::KIND_UNSPECIFIED, 0);
  Arg(k, KernelArgument::TENSOR_MAP, TensorRef::INPUT, 0);
  k.mutable_arguments(9)->add_box(64);
  k.mutable_arguments(9)->add_box(32);
  Arg(k, KernelArgument::POINTER, TensorRef::OUTPUT, 0);
  LaunchTensors tensors;
  tensors[{TensorRef::INPUT, 0}] = LaunchTensor{tir::v1::DTYPE_F16, {96, 64}, {72, 1}};
  tensors[{TensorRef::INPUT, 1}] = LaunchTensor{tir::v1::DTYPE_F16, {}, {}};
  tensors[{TensorRef::OUTPUT, 0}] = LaunchTensor{tir::v1::DTYPE_F32, {96, 64}, {64, 1}};
  auto fields = KernelFields(k, tensors);
  ASSERT_TRUE(fields.ok()) << fields.status();
  ASSERT_EQ(fields->size(), 8u);
  EXPECT_EQ((*fields)[0].kind, LaunchField::kPointer);
  EXPECT_EQ((*fields)[1].values, (std::vector<int64_t>{96, 64}));
  EXPECT_EQ((*fields)[2].values, (std::vector<int64_t>{72, 1}));  // the launch's strides, not row-major
  EXPECT_EQ((*fields)[3].kind, LaunchField::kScalar);
  EXPECT_EQ((*fields)[3].bytes, 2u);  // an f16 scalar
  EXPECT_EQ((*fields)[4].values, (std::vector<int64_t>{96, 64}));  // the iteration domain
  EXPECT_EQ((*fields)[5].kind, LaunchField::kWorkspace);
  EXPECT_EQ((*fields)[6].kind, LaunchField::kTensorMap);
  EXPECT_EQ((*fields)[6].box, (std::vector<uint32_t>{64, 32}));
  EXPECT_EQ((*fields)[7].tensor_kind, TensorRef::OUTPUT);

  // pointer 0, sizes 8..24, strides 24..40, f16 at 40, domain 48..64,
  // workspace 64, the map at 128 (64-aligned, 128 bytes), the output at 256.
  const ParamLayout layout = CudaParamLayout(*fields);
  EXPECT_EQ(layout.offsets, (std::vector<size_t>{0, 8, 24, 40, 48, 64, 128, 256}));
  EXPECT_EQ(layout.bytes, 320u);
  EXPECT_EQ(layout.align, 64u);

  // A record naming a tensor the launch lacks is refused.
  Arg(k, KernelArgument::POINTER, TensorRef::INTERMEDIATE, 3);
  EXPECT_EQ(ReasonOf(KernelFields(k, tensors).status()), "FAILED_PRECONDITION");
}

tir::v1::KernelBundle CubinBundle() {
  tir::v1::KernelBundle b;
  b.set_key("0123456789abcdef0123");
  b.set_arch("sm_90a");
  tir::v1::TensorType *t = b.add_inputs();
  t->set_dtype(tir::v1::DTYPE_F32);
  t->add_shape(4);
  *b.add_outputs() = *t;
  tir::v1::KernelEntry *k = b.add_kernels();
  k->set_format(tir::v1::BINARY_FORMAT_CUBIN);
  k->set_binary("not a cubin");
  k->set_binary_sha256(Sha256Hex("not a cubin"));
  k->add_iteration_domain(4);
  return b;
}

TEST(CudaBundleRunner, RefusesWhatItCannotRunBeforeLoadingAnything) {
  tir::v1::KernelBundle host = CubinBundle();
  host.mutable_kernels(0)->set_format(tir::v1::BINARY_FORMAT_HOST_SHARED_OBJECT);
  EXPECT_EQ(ReasonOf(CudaBundleRunner::Load(host).status()), "BUNDLE_NOT_RUNNABLE");
  tir::v1::KernelBundle dynamic = CubinBundle();
  dynamic.mutable_inputs(0)->set_shape(0, -1);
  EXPECT_EQ(ReasonOf(CudaBundleRunner::Load(dynamic).status()), "BUNDLE_NOT_RUNNABLE");
  // The signature is checked first: an altered bundle never reaches the driver.
  tir::v1::KernelBundle signed_ = CubinBundle();
  SignBundle(signed_, "key");
  signed_.mutable_kernels(0)->mutable_binary()->append("x");
  EXPECT_EQ(ReasonOf(CudaBundleRunner::Load(signed_, "key").status()), "BUNDLE_SIGNATURE_INVALID");
  EXPECT_EQ(ReasonOf(RunCudaBundle(CubinBundle(), {}).status()), "INPUT_MISMATCH");
  // A binary that is not the one its bundle names, or one named by no hash.
  tir::v1::KernelBundle swapped = CubinBundle();
  swapped.mutable_kernels(0)->set_binary("another binary");
  EXPECT_EQ(ReasonOf(CudaBundleRunner::Load(swapped).status()), "BINARY_HASH_MISMATCH");
  tir::v1::KernelBundle unnamed = CubinBundle();
  unnamed.mutable_kernels(0)->clear_binary_sha256();
  EXPECT_EQ(ReasonOf(CudaBundleRunner::Load(unnamed).status()), "BINARY_UNCHECKED");
}

TEST(CudaBundleRunner, WithoutAGpuTheDriverIsReportedMissing) {
  auto runner = CudaBundleRunner::Load(CubinBundle());
  ASSERT_FALSE(runner.ok());  // no driver, or (on a GPU) a binary that is no cubin
  if (ReasonOf(runner.status()) == "CUDA_DRIVER_UNAVAILABLE") {
    std::printf("skipped: launching a cubin needs a GPU; this machine has none (%s)\n",
                std::string(runner.status().message()).c_str());
  } else {
    EXPECT_NE(std::string(runner.status().message()).find("cuModuleLoadData"), std::string::npos) << runner.status();
  }
}

}  // namespace
}  // namespace tir::client
