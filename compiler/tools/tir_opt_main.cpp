//===- tir_opt_main.cpp - tir's mlir-opt ----------------------------------===//
//
// Like mlir-opt, with the tir dialect and passes registered, and with input
// in NVIDIA TensorIR's textual form accepted as is (see TensorIrCompat.h).

#include "compiler/ir/Registration.h"
#include "compiler/ir/TensorIrCompat.h"
#include "compiler/transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

namespace cl = llvm::cl;

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::registerTransformsPasses();  // canonicalize, cse, ...
  tir::registerTirPasses();

  static cl::opt<std::string> inputFilename(cl::Positional, cl::desc("<input file>"),
                                            cl::init("-"));
  static cl::opt<std::string> outputFilename("o", cl::desc("Output filename"),
                                             cl::value_desc("filename"), cl::init("-"));
  static cl::opt<bool> splitInputFile(
      "split-input-file",
      cl::desc("Split the input file at '// -----' and process each chunk separately"),
      cl::init(false));
  static cl::opt<bool> verifyDiagnostics(
      "verify-diagnostics",
      cl::desc("Check that emitted diagnostics match expected-* lines in the input"),
      cl::init(false));
  static cl::opt<bool> verifyPasses("verify-each", cl::desc("Run the verifier after each pass"),
                                    cl::init(true));
  static cl::opt<bool> emitBytecode("emit-bytecode", cl::desc("Emit MLIR bytecode"),
                                    cl::init(false));
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  mlir::PassPipelineCLParser passPipeline("", "Passes to run");
  cl::ParseCommandLineOptions(argc, argv,
                              "tir-opt: parse, verify and transform tir graphs (tir or "
                              "TensorIR textual form)\n");

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input = mlir::openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << "tir-opt: " << error << "\n";
    return 1;
  }
  // Respell TensorIR's namespace (same lines and columns), unless bytecode.
  if (!input->getBuffer().startswith("ML\xefR")) {
    input = llvm::MemoryBuffer::getMemBufferCopy(tir::aliasTensorIrNamespace(input->getBuffer()),
                                                 input->getBufferIdentifier());
  }
  std::unique_ptr<llvm::ToolOutputFile> output = mlir::openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << "tir-opt: " << error << "\n";
    return 1;
  }
  mlir::DialectRegistry registry;
  tir::registerTirDialects(registry);
  if (mlir::failed(mlir::MlirOptMain(output->os(), std::move(input), passPipeline, registry,
                                     splitInputFile, verifyDiagnostics, verifyPasses,
                                     /*allowUnregisteredDialects=*/false,
                                     /*preloadDialectsInContext=*/false, emitBytecode,
                                     /*implicitModule=*/true))) {
    return 1;
  }
  output->keep();
  return 0;
}
