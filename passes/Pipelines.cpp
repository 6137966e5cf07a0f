//===- Pipelines.cpp - The default pipeline, by name ----------------------===//

#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"

namespace tfmc {
namespace {
#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

struct DefaultPipelineOptions
    : mlir::PassPipelineOptions<DefaultPipelineOptions> {
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("Target to tile for"),
                             llvm::cl::init("host")};
  Option<int64_t> maxBatch{*this, "max-batch",
                           llvm::cl::desc("Largest batch the arena holds"),
                           llvm::cl::init(1)};
  Option<int64_t> maxSeq{*this, "max-seq",
                         llvm::cl::desc("Longest sequence (0: tfm.max_len)"),
                         llvm::cl::init(0)};
  Option<std::string> weightDtype{
      *this, "weight-dtype",
      llvm::cl::desc("Storage of linear and embedding weights: f32, bf16, int8"),
      llvm::cl::init("f32")};
  Option<std::string> activations{
      *this, "activations",
      llvm::cl::desc("What linears with narrow weights multiply: f32, int8 "
                     "(int8 or int4 weights), bf16 (bf16 weights)"),
      llvm::cl::init("f32")};
  Option<std::string> weightLayout{
      *this, "weight-layout",
      llvm::cl::desc("f32 linear weights on CPU targets: panels or rows"),
      llvm::cl::init("panels")};
};
} // namespace

void buildDefaultPipeline(mlir::OpPassManager &pm,
                          const PipelineOptions &options) {
  pm.addNestedPass<mlir::func::FuncOp>(createFuseMaskedAttention());
  pm.addNestedPass<mlir::func::FuncOp>(createFuseEpilogues());
  pm.addNestedPass<mlir::func::FuncOp>(createCheckKernels());
  WeightStorageOptions storage;
  storage.dtype = options.weightDtype;
  storage.activations = options.activations;
  storage.group = options.int8Group;
  storage.overrides = options.weightOverrides;
  pm.addPass(createWeightStorage(storage));
  if (options.activations == "int8")
    pm.addNestedPass<mlir::func::FuncOp>(createQuantiseOnce({options.target}));
  if (options.weightLayout == "panels")
    pm.addPass(createWeightLayout({options.target}));
  pm.addPass(createTile({options.target, options.maxSeq, options.maxBatch}));
  // A CPU target's KV cache is paged (compiler/codegen/Lowering.cpp); an
  // unknown target is the tile pass's error to report.
  std::string error;
  std::optional<target::TargetDescription> description =
      target::lookupTarget(options.target, error);
  const bool pagedCache = description && !description->isGpu();
  pm.addNestedPass<mlir::func::FuncOp>(createPlanMemory(
      {options.maxBatch, options.maxSeq, options.inPlace, pagedCache}));
}

void registerPasses() {
  registerTfmPasses();
  mlir::PassPipelineRegistration<DefaultPipelineOptions>(
      "tfm-default-pipeline",
      "Fuse masked attention and epilogues, tile for a target, plan memory",
      [](mlir::OpPassManager &pm, const DefaultPipelineOptions &options) {
        PipelineOptions pipeline;
        pipeline.target = options.target;
        pipeline.maxBatch = options.maxBatch;
        pipeline.maxSeq = options.maxSeq;
        pipeline.weightDtype = options.weightDtype;
        pipeline.activations = options.activations;
        pipeline.weightLayout = options.weightLayout;
        buildDefaultPipeline(pm, pipeline);
      });
}

} // namespace tfmc
