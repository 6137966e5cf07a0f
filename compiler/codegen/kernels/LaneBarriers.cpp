//===- LaneBarriers.cpp - Barriers in one-warp GPU kernels ----------------===//
//
// The GEMM and attention kernels run one warp per thread block (gpu_lanes,
// so that Halide 14 stripes their register accumulators across the lanes).
// Halide's FuseGPUThreadLoops injects barriers only into blocks with a
// gpu_thread loop: a warp is assumed to run in lock step. Since Volta, the
// lanes of a warp are scheduled independently, and lanes reading a shared
// memory tile that other lanes wrote need a barrier between the write and
// the read, and between the last read of a tile and its next write
// (compute-sanitizer's racecheck reports both on an H100). This pass,
// run after Halide's own lowering, puts a barrier wherever the warp is
// converged (outside any lane-dependent condition or loop bound) between
// statements that write and then read or write the same shared memory, and
// at the end of each iteration of a loop whose body does that.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/kernels/Common.h"

#include <set>
#include <string>

namespace tfmc::codegen::kernels {
namespace {

using namespace Halide;
using namespace Halide::Internal;

/// Names of the shared-memory allocations of a statement.
class SharedAllocations : public IRVisitor {
public:
  std::set<std::string> names;

private:
  using IRVisitor::visit;
  void visit(const Allocate *op) override {
    if (op->memory_type == MemoryType::GPUShared)
      names.insert(op->name);
    IRVisitor::visit(op);
  }
};

/// The shared buffers a statement loads and stores.
class SharedAccesses : public IRVisitor {
public:
  explicit SharedAccesses(const std::set<std::string> &shared)
      : shared(shared) {}
  std::set<std::string> loads, stores;

  static bool intersect(const std::set<std::string> &a,
                        const std::set<std::string> &b) {
    for (const std::string &name : a)
      if (b.count(name))
        return true;
    return false;
  }

private:
  const std::set<std::string> &shared;
  using IRVisitor::visit;
  void visit(const Load *op) override {
    if (shared.count(op->name))
      loads.insert(op->name);
    IRVisitor::visit(op);
  }
  void visit(const Store *op) override {
    if (shared.count(op->name))
      stores.insert(op->name);
    IRVisitor::visit(op);
  }
};

class InjectLaneBarriers : public IRMutator {
public:
  explicit InjectLaneBarriers(std::set<std::string> shared)
      : shared(std::move(shared)) {}

private:
  std::set<std::string> shared;
  // Variables whose value differs between the lanes of the warp.
  std::set<std::string> laneVaried;
  bool inLaneLoop = false;

  using IRMutator::visit;

  SharedAccesses accesses(const Stmt &s) const {
    SharedAccesses found(shared);
    s.accept(&found);
    return found;
  }

  bool laneDependent(const Expr &e) const {
    for (const std::string &name : laneVaried)
      if (expr_uses_var(e, name))
        return true;
    return false;
  }

  static Stmt barrier() {
    // Halide's PTX code generator emits bar.sync 0 for it, whatever the
    // fence mask: a full barrier of the (one-warp) block.
    return Evaluate::make(Call::make(Int(32), Call::gpu_thread_barrier,
                                     {IntImm::make(Int(32), 0)},
                                     Call::Intrinsic));
  }

  Stmt visit(const For *op) override {
    if (op->for_type == ForType::GPULane && !inLaneLoop) {
      ScopedValue<bool> inside(inLaneLoop, true);
      laneVaried = {op->name};
      return For::make(op->name, op->min, op->extent, op->for_type,
                       op->device_api, mutate(op->body));
    }
    if (!inLaneLoop)
      return IRMutator::visit(op);
    // A lane-dependent trip count, or a loop over threads or lanes: the warp
    // is not converged inside.
    if (op->for_type == ForType::GPULane ||
        op->for_type == ForType::GPUThread || laneDependent(op->min) ||
        laneDependent(op->extent))
      return op;
    Stmt body = mutate(op->body);
    // The next iteration overwrites what this one read.
    SharedAccesses inBody = accesses(op->body);
    if (SharedAccesses::intersect(inBody.stores, inBody.loads))
      body = Block::make(body, barrier());
    return For::make(op->name, op->min, op->extent, op->for_type,
                     op->device_api, body);
  }

  Stmt visit(const Block *op) override {
    if (!inLaneLoop)
      return IRMutator::visit(op);
    Stmt first = mutate(op->first);
    Stmt rest = mutate(op->rest);
    SharedAccesses a = accesses(op->first), b = accesses(op->rest);
    // Lanes write disjoint parts of a tile: only a read after a write, or a
    // write after a read, orders lanes.
    bool hazard = SharedAccesses::intersect(a.stores, b.loads) ||
                  SharedAccesses::intersect(a.loads, b.stores);
    return hazard ? Block::make({first, barrier(), rest})
                  : Block::make(first, rest);
  }

  Stmt visit(const IfThenElse *op) override {
    if (inLaneLoop && laneDependent(op->condition))
      return op;
    return IRMutator::visit(op);
  }

  Stmt visit(const LetStmt *op) override {
    if (!inLaneLoop || !laneDependent(op->value))
      return IRMutator::visit(op);
    bool added = laneVaried.insert(op->name).second;
    Stmt result = IRMutator::visit(op);
    if (added)
      laneVaried.erase(op->name);
    return result;
  }
};

/// The pass as Halide runs custom passes: one mutate of the whole statement.
class LaneBarrierPass : public IRMutator {
public:
  using IRMutator::mutate;
  Stmt mutate(const Stmt &s) override {
    SharedAllocations allocations;
    s.accept(&allocations);
    if (allocations.names.empty())
      return s;
    return InjectLaneBarriers(std::move(allocations.names)).mutate(s);
  }
};

} // namespace

void addLaneBarrierPass(Pipeline &pipeline) {
  pipeline.add_custom_lowering_pass(new LaneBarrierPass);
}

} // namespace tfmc::codegen::kernels
