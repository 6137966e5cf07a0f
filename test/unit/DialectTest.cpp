//===- DialectTest.cpp - What each tfm op tells the passes ----------------===//
//
// The passes and codegen ask each op its kernel kind, whether its result has
// its input's shape, whether it may write in place, whether it is a view of
// memory (KernelOpInterface, the traits), and a norm its gain, bias and
// residual (NormOpInterface). The table below states every op's answers: an
// op added to the dialect without a row fails EveryOpIsListed, so its answers
// are decided, not inherited by accident.
//
//===----------------------------------------------------------------------===//

#include "dialects/tfm/TfmDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>
#include <string>

using namespace mlir;
using namespace tfmc::tfm;

namespace {

struct Answers {
  const char *name;
  std::optional<KernelKind> kind; // nullopt: not a kernel
  bool sameShape = false;         // Tfm_SameShapeAsInput
  bool inPlace = false;           // Tfm_ElementwiseInPlace
  bool view = false;              // Tfm_MemoryView
  bool norm = false;              // NormOpInterface
};

constexpr std::nullopt_t kNone = std::nullopt;

const Answers kOps[] = {
    // name                 kind                       same   inplace view  norm
    {"tfm.weight",          kNone,                     false, false, true,  false},
    {"tfm.split",           kNone,                     false, false, true,  false},
    {"tfm.kv_append",       kNone,                     false, false, true,  false},
    {"tfm.kv_read",         kNone,                     false, false, true,  false},
    {"tfm.embedding",       KernelKind::Embedding,     false, false, false, false},
    {"tfm.positions",       KernelKind::Positions,     true,  true,  false, false},
    {"tfm.linear",          KernelKind::Linear,        false, false, false, false},
    {"tfm.gated_linear",    KernelKind::GatedLinear,   false, false, false, false},
    {"tfm.scale",           KernelKind::Scale,         true,  true,  false, false},
    {"tfm.softcap",         KernelKind::Softcap,       true,  true,  false, false},
    {"tfm.add",             KernelKind::Add,           true,  true,  false, false},
    {"tfm.mul",             KernelKind::Mul,           true,  false, false, false},
    {"tfm.activation",      KernelKind::Activation,    true,  true,  false, false},
    {"tfm.layer_norm",      KernelKind::LayerNorm,     true,  false, false, true},
    {"tfm.rms_norm",        KernelKind::RmsNorm,       true,  false, false, true},
    {"tfm.rope",            KernelKind::Rope,          true,  false, false, false},
    {"tfm.attention",       KernelKind::Attention,     false, false, false, false},
    {"tfm.last_position",   KernelKind::LastPosition,  false, false, false, false},
    {"tfm.first_position",  KernelKind::FirstPosition, false, false, false, false},
    {"tfm.quantize",        KernelKind::Quantize,      false, false, false, false},
    // The step-by-step forms the fusions remove: no kernel.
    {"tfm.matmul",          kNone,                     false, false, false, false},
    {"tfm.split_heads",     kNone,                     false, false, false, false},
    {"tfm.merge_heads",     kNone,                     false, false, false, false},
    {"tfm.repeat_heads",    kNone,                     false, false, false, false},
    {"tfm.softmax",         kNone,                     false, false, false, false},
    {"tfm.causal_mask",     kNone,                     false, false, false, false},
    {"tfm.window_mask",     kNone,                     false, false, false, false},
    {"tfm.padding_mask",    kNone,                     false, false, false, false},
    {"tfm.mask_and",        kNone,                     false, false, false, false},
    {"tfm.apply_mask",      kNone,                     false, true,  false, false},
};

struct DialectTest : ::testing::Test {
  DialectTest() {
    DialectRegistry registry;
    registerDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  OwningOpRef<ModuleOp> parse(const char *text) {
    return parseSourceString<ModuleOp>(text, &context);
  }

  MLIRContext context;
};

TEST_F(DialectTest, EveryOpIsListed) {
  auto *dialect = context.getLoadedDialect<TfmDialect>();
  ASSERT_NE(dialect, nullptr);
  std::set<std::string> listed, registered;
  for (const Answers &op : kOps)
    listed.insert(op.name);
  for (RegisteredOperationName name : context.getRegisteredOperations())
    if (&name.getDialect() == dialect)
      registered.insert(name.getStringRef().str());
  EXPECT_EQ(listed, registered);
}

TEST_F(DialectTest, EveryOpAnswers) {
  for (const Answers &expected : kOps) {
    SCOPED_TRACE(expected.name);
    std::optional<RegisteredOperationName> name =
        RegisteredOperationName::lookup(expected.name, &context);
    ASSERT_TRUE(name.has_value());
    std::optional<KernelKind> kind;
    if (auto *kernel = name->getInterface<KernelOpInterface>())
      kind = kernel->getKernelKind();
    EXPECT_EQ(kind, expected.kind);
    EXPECT_EQ(name->hasTrait<SameShapeAsInput>(), expected.sameShape);
    EXPECT_EQ(name->hasTrait<ElementwiseInPlace>(), expected.inPlace);
    EXPECT_EQ(name->hasTrait<MemoryView>(), expected.view);
    EXPECT_EQ(name->hasInterface<NormOpInterface>(), expected.norm);
    // A view is never a kernel.
    EXPECT_FALSE(expected.view && expected.kind);
  }
}

// A norm's operands by role: init-weights' ones and zeros, the kernel's
// arguments and the residual fusion all read them through the interface.
TEST_F(DialectTest, NormRoles) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
    func.func @f(%x: tensor<?x?x8xf32>, %r: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
      %g = tfm.weight "g" : tensor<8xf32>
      %b = tfm.weight "b" : tensor<8xf32>
      %0 = tfm.layer_norm %x residual %r, %g, %b {eps = 1.0e-05 : f64} : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
      %1 = tfm.rms_norm %0, %g {eps = 1.0e-06 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
      return %1 : tensor<?x?x8xf32>
    })mlir");
  ASSERT_TRUE(module);
  auto func = *module->getOps<func::FuncOp>().begin();
  Value x = func.getArgument(0), r = func.getArgument(1);
  SmallVector<NormOpInterface> norms;
  func.walk([&](NormOpInterface norm) { norms.push_back(norm); });
  ASSERT_EQ(norms.size(), 2u);
  auto layerNorm = cast<LayerNormOp>(norms[0]);
  EXPECT_EQ(norms[0].getInput(), x);
  EXPECT_EQ(norms[0].getResidual(), r);
  EXPECT_EQ(norms[0].getGamma(), layerNorm.getGamma());
  EXPECT_EQ(norms[0].getBeta(), layerNorm.getBeta());
  EXPECT_EQ(norms[0].getEps().convertToDouble(), 1e-5);

  auto rmsNorm = cast<RmsNormOp>(norms[1]);
  EXPECT_EQ(norms[1].getInput(), layerNorm.getResult());
  EXPECT_FALSE(norms[1].getResidual());
  EXPECT_EQ(norms[1].getGamma(), rmsNorm.getGamma());
  EXPECT_FALSE(norms[1].getBeta()); // RMSNorm has no bias
  EXPECT_EQ(norms[1].getEps().convertToDouble(), 1e-6);

  // What tfm-fuse-epilogues does with norm(x + r): input x, residual r.
  norms[1].getInputMutable().assign(x);
  norms[1].getResidualMutable().assign(r);
  EXPECT_EQ(rmsNorm.getInput(), x);
  EXPECT_EQ(rmsNorm.getResidual(), r);
  EXPECT_EQ(rmsNorm.getGamma(), layerNorm.getGamma());
  EXPECT_TRUE(succeeded(verify(*module)));
}

// The operands a kernel widens from bf16, int8 or int4 (tfm-weight-storage).
TEST_F(DialectTest, WidenedWeights) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
    func.func @f(%x: tensor<?x?x8xf32>, %ids: tensor<?x?xi64>) -> (tensor<?x?x8xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>) {
      %t = tfm.weight "t" : tensor<10x8xf32>
      %e = tfm.embedding %t[%ids] : tensor<10x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
      %w = tfm.weight "w" : tensor<16x8xf32>
      %b = tfm.weight "b" : tensor<16xf32>
      %l = tfm.linear %x, %w bias %b : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
      %u = tfm.weight "u" : tensor<16x8xf32>
      %gl = tfm.gated_linear %x, %w, %u <silu> : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
      %s = tfm.scale %x by 2.0 : tensor<?x?x8xf32>
      return %e, %l, %s : tensor<?x?x8xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>
    })mlir");
  ASSERT_TRUE(module);
  auto func = *module->getOps<func::FuncOp>().begin();
  auto widened = [](Operation *op) {
    std::string operands;
    for (OpOperand &operand : op->getOpOperands())
      if (cast<KernelOpInterface>(op).widensWeight(operand))
        operands += std::to_string(operand.getOperandNumber());
    return operands;
  };
  std::map<std::string, std::string> byOp;
  func.walk([&](KernelOpInterface kernel) {
    byOp[kernel->getName().getStringRef().str()] = widened(kernel);
  });
  EXPECT_EQ(byOp["tfm.embedding"], "0");    // the table, not the ids
  EXPECT_EQ(byOp["tfm.linear"], "1");       // the weight, not x or the bias
  EXPECT_EQ(byOp["tfm.gated_linear"], "12"); // gate and up
  EXPECT_EQ(byOp["tfm.scale"], "");
}

// The trait checks what codegen relies on: the result has the input's shape.
TEST_F(DialectTest, SameShapeAsInputIsVerified) {
  std::string diagnostic;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    diagnostic = diag.str();
    return success();
  });
  OwningOpRef<ModuleOp> module = parse(R"mlir(
    func.func @f(%x: tensor<2x3x8xf32>) -> tensor<2x4x8xf32> {
      %g = tfm.weight "g" : tensor<8xf32>
      %0 = tfm.rms_norm %x, %g {eps = 1.0e-06 : f64} : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
      return %0 : tensor<2x4x8xf32>
    })mlir");
  EXPECT_FALSE(module);
  EXPECT_NE(diagnostic.find("result type 'tensor<2x4x8xf32>' does not match "
                            "input type 'tensor<2x3x8xf32>'"),
            std::string::npos)
      << diagnostic;
}

} // namespace
