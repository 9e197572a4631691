#include "compiler/ir/Registration.h"

#include "compiler/ir/TensorIrCompat.h"
#include "compiler/ir/TirDialect.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/Parser/Parser.h"

namespace tir {

void registerTirDialects(mlir::DialectRegistry &registry) {
  registry.insert<TirDialect, mlir::arith::ArithDialect>();
}

std::unique_ptr<mlir::MLIRContext> makeTirContext() {
  mlir::DialectRegistry registry;
  registerTirDialects(registry);
  auto context = std::make_unique<mlir::MLIRContext>(registry,
                                                     mlir::MLIRContext::Threading::DISABLED);
  context->loadAllAvailableDialects();
  return context;
}

mlir::OwningOpRef<mlir::ModuleOp> parseTirModule(llvm::StringRef source,
                                                 mlir::MLIRContext *context,
                                                 llvm::StringRef bufferName) {
  std::string text;
  if (!mlir::isBytecode(llvm::MemoryBufferRef(source, bufferName))) {
    text = aliasTensorIrNamespace(source);
    source = text;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(source, bufferName),
                               llvm::SMLoc());
  mlir::ParserConfig config(context);
  return mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, config);
}

}  // namespace tir
