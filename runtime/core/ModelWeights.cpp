//===- ModelWeights.cpp - Weights: found, checked, stored as compiled -----===//
//
// Loading is two passes over the plan's weights, read from one safetensors
// file or a sharded checkpoint (WeightFiles.h). The first finds each
// tensor and checks its dtype and shape against the plan, so that a wrong
// file is a one-line error naming the tensor before any work; it reads no
// tensor's values (an int8 or int4 block's scale that is an infinity or a
// NaN gives non-finite values, as an f32 weight that is one does). The
// second makes each weight what the kernels read:
//  - a tensor already stored as the program stores it (F32 for an f32
//    weight, BF16 from a checkpoint or `NAME convert-weights`, I8 int8
//    blocks or U8 Q4_0 blocks from convert-weights) is used in place in the
//    mapping, or copied once when the file does not align it;
//  - any other F32, BF16 or F16 tensor is widened to f32 (exact), then
//    transposed once when the file holds the transpose (Hugging Face
//    Conv1D), then converted to the program's bf16, int8 or int4
//    (WeightConvert.h): so a bf16 checkpoint gives bit for bit what its
//    values written as f32 give, at every program dtype. An f32 weight the
//    program stores in panels (the plan's `panel`) is laid out in them from
//    the file's layout, transposed or not. This is the time load reports as
//    conversion.
// A transposed weight stored BF16 is read in the plan's layout only from a
// file convert-weights wrote (its `tfmc.weight_dtype` metadata): a
// checkpoint's BF16 Conv1D weight is in the checkpoint's layout, and a
// square one could not tell by its shape.
//
// A GGUF file (GgufWeights.h) adds ggml's block types (GgmlBlocks.h): Q4_0
// is an int4 program's weight as it is, Q8_0 an int8 program's with
// groups of 32, and Q4_K, Q5_K, Q6_K a program's of that K-quant (all used
// in place); Q5_0 and IQ4_NL blocks are rewritten as an int8 program's
// blocks of 32, exactly (GgmlBlocks.h); any other use of them is
// dequantized to f32 as ggml does and converted as any f32 tensor is (to a
// K-quant by ggml's reference quantiser, WeightConvert.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/core/GgmlBlocks.h"
#include "runtime/core/Model.h"
#include "runtime/core/ModelImpl.h"
#include "runtime/core/WeightConvert.h"
#include "support/Gguf.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

namespace tfmc::runtime {
namespace {

/// GPT-2 checkpoints carry the causal-mask buffers, and Llama checkpoints
/// saved by older transformers the rotary inverse frequencies (recomputed
/// from rope_theta; a rope_scaling that would change them is refused by the
/// importer); docs/user-guide.md says they are ignored, so they are not worth a
/// warning either. A Phi-3 GGUF file's longrope factors and a llama file's
/// rope_freqs are read by tfmc at compile time (tfm.rope's scaling), not at
/// run time.
bool isIgnoredBuffer(const std::string &name) {
  auto endsWith = [&](const char *suffix) {
    std::size_t length = std::strlen(suffix);
    return name.size() >= length &&
           name.compare(name.size() - length, length, suffix) == 0;
  };
  return endsWith(".attn.bias") || endsWith(".attn.masked_bias") ||
         endsWith(".rotary_emb.inv_freq") || name == "rope_factors_long.weight" ||
         name == "rope_factors_short.weight" || name == "rope_freqs.weight";
}

/// GPT2LMHeadModel's output layer is wte itself; a checkpoint that also
/// stores it as `lm_head.weight` holds the same values, so that copy is not
/// worth a warning. A different lm_head (an untied model, which tfmc does not
/// compute) is still reported as unused.
bool isTiedCopy(const WeightFiles &files, const TensorView &tensor,
                const std::set<std::string> &used) {
  // llama.cpp's convert_hf_to_gguf.py writes GPT-2's tied head again as
  // output.weight (in the head's own type, Q6_K in a Q4_0 file); tfmc's
  // GPT-2 multiplies by token_embd, as the checkpoint did.
  if (files.gguf() && files.gguf()->architecture() == "gpt2")
    return tensor.name == "output.weight" && used.count("token_embd.weight");
  if (tensor.name != "lm_head.weight")
    return false;
  for (const char *name : {"wte.weight", "transformer.wte.weight"}) {
    if (!used.count(name))
      continue;
    const TensorView *table = files.find(name);
    return table && table->dtype == tensor.dtype &&
           table->shape == tensor.shape && table->bytes == tensor.bytes &&
           std::memcmp(table->data, tensor.data, tensor.bytes) == 0;
  }
  return false;
}

/// `rows` x `cols` f32 values (any alignment) as a fresh aligned
/// [cols, rows] buffer (null data when out of memory).
AlignedBuffer transposeToAligned(const void *data, int64_t rows,
                                 int64_t cols) {
  AlignedBuffer out(static_cast<std::size_t>(rows * cols) * sizeof(float));
  if (!out.data())
    return out;
  const auto *source = static_cast<const unsigned char *>(data);
  auto *target = static_cast<float *>(out.data());
  // Blocks of 32 x 32 keep both sides' cache lines in use.
  constexpr int64_t kBlock = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock)
    for (int64_t c0 = 0; c0 < cols; c0 += kBlock)
      for (int64_t r = r0; r < std::min(r0 + kBlock, rows); ++r)
        for (int64_t c = c0; c < std::min(c0 + kBlock, cols); ++c)
          std::memcpy(&target[c * rows + r],
                      source + (r * cols + c) * sizeof(float), sizeof(float));
  return out;
}

/// The ggml type of a K-quant dtype's blocks.
int32_t ggmlTypeOf(WeightDType dtype) {
  return dtype == WeightDType::Q4K   ? format::kGgmlQ4K
         : dtype == WeightDType::Q5K ? format::kGgmlQ5K
                                     : format::kGgmlQ6K;
}

bool isFloatSource(DType dtype) {
  return dtype == DType::F32 || dtype == DType::BF16 || dtype == DType::F16;
}

/// The file's dtypes a weight may have, the program's own first.
std::string acceptedDTypes(const PlanWeight &weight) {
  switch (weight.dtype) {
  case WeightDType::F32: return "F32, BF16 or F16";
  case WeightDType::BF16: return "BF16, F32 or F16";
  case WeightDType::Int8: return "I8 (int8 blocks), F32, BF16 or F16";
  case WeightDType::Int4: return "U8 (Q4_0 blocks), F32, BF16 or F16";
  case WeightDType::Q4K:
  case WeightDType::Q5K:
  case WeightDType::Q6K: return "U8 (its super-blocks), F32, BF16 or F16";
  }
  return "F32, BF16 or F16";
}

DType storedDType(WeightDType dtype) {
  switch (dtype) {
  case WeightDType::F32: return DType::F32;
  case WeightDType::BF16: return DType::BF16;
  case WeightDType::Int8: return DType::I8;
  case WeightDType::Int4:
  case WeightDType::Q4K:
  case WeightDType::Q5K:
  case WeightDType::Q6K: return DType::U8;
  }
  return DType::F32;
}

/// Whether convert-weights wrote the file with `metadata` (its narrow
/// tensors are then in the plan's layout, never transposed).
bool writtenByConvertWeights(const std::map<std::string, std::string> &metadata) {
  return metadata.count("tfmc.weight_dtype") != 0;
}

/// convert-weights of a program in panels writes its f32 linear weights in
/// them (support/WeightFormat.h).
bool writtenInPanels(const std::map<std::string, std::string> &metadata) {
  auto it = metadata.find(format::kLayoutMetadataKey);
  return it != metadata.end() && it->second == format::kPanelsLayout;
}

/// Drops the pages of [data, data + bytes) that a file mapping holds from
/// the process's memory: weights repacked from them are not read there
/// again (the file stays mapped; a page read later is read again).
void releasePages(const void *data, std::size_t bytes) {
  const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const std::uintptr_t begin =
      (reinterpret_cast<std::uintptr_t>(data) + page - 1) / page * page;
  const std::uintptr_t end =
      (reinterpret_cast<std::uintptr_t>(data) + bytes) / page * page;
  if (end > begin)
    (void)::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
}

/// An int8 or int4 weight's rows of blocks, just converted, into block
/// panels in place of them (through one more buffer); false: out of memory.
bool toBlockPanels(const PlanWeight &weight, AlignedBuffer &blocks,
                   int threads) {
  AlignedBuffer panels(blocks.size());
  if (!panels.data())
    return false;
  layOutBlockPanels(static_cast<const uint8_t *>(blocks.data()),
                    weight.shape[0], weight.blockRowBytes(), weight.group,
                    weight.dtype == WeightDType::Int4,
                    static_cast<uint8_t *>(panels.data()), threads);
  blocks = std::move(panels);
  return true;
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       start)
      .count();
}

} // namespace

bool Model::Weights::load(const Plan &plan, const std::string &weightsPath,
                          std::string &error) {
  auto start = std::chrono::steady_clock::now();
  weightFiles = WeightFiles::open(weightsPath, error);
  if (!weightFiles)
    return false;
  const WeightFiles &files = *weightFiles;
  loadStats.mapSeconds = secondsSince(start);

  // Pass 1: every tensor found and checked.
  struct Found {
    const TensorView *tensor = nullptr;
    bool stored = false;                // no conversion: as the plan stores it
    // Stored blocks in the other layout: laid out in block panels, or back
    // in rows (support/WeightFormat.h); or a GGUF file's Q5_0 or IQ4_NL
    // blocks, rewritten as the int8 blocks of 32 that hold their values
    // exactly (GgmlBlocks.h's transcodeGgmlToInt8), in rows or in block
    // panels as the plan stores them.
    enum class Move { None, ToPanels, ToRows, ToInt8 } move = Move::None;
  };
  std::vector<Found> found;
  std::set<std::string> used;
  for (const PlanWeight &weight : plan.weights) {
    // The first of the weight's names that the files hold (a Hugging
    // Face checkpoint with or without the `transformer.` prefix).
    std::string name = weight.name;
    if (!files.find(name)) {
      for (const std::string &alt : weight.altNames)
        if (files.find(alt)) {
          name = alt;
          break;
        }
    }
    const TensorView *tensor = files.find(name);
    if (!tensor) {
      std::string tried;
      for (const std::string &alt : weight.altNames)
        tried += (tried.empty() ? "" : ", ") + support::quote(alt);
      error = fmt::format("{}: missing tensor {}{}", files.path(),
                          support::quote(weight.name),
                          tried.empty() ? "" : " (also tried " + tried + ")");
      return false;
    }
    // Messages about the tensor name the file (the shard) that holds it.
    const std::string &path = files.pathOf(name);
    const std::map<std::string, std::string> &metadata = files.metadataOf(name);
    Found entry;
    const DType stored = storedDType(weight.dtype);
    // I8 and U8 come only from convert-weights (or a converter that
    // writes its layout); BF16 also from checkpoints.
    const bool integer = weight.dtype == WeightDType::Int8 ||
                         weight.dtype == WeightDType::Int4 ||
                         isKQuant(weight.dtype);
    if (tensor->ggmlBlocks >= 0) {
      // ggml blocks (a GGUF file's): the values' [rows, cols], never
      // transposed (llama.cpp's converter writes [out, in]).
      if (tensor->shape != weight.shape || weight.transposed) {
        error = fmt::format("{}: tensor {} has shape {}, expected {}", path,
                            support::quote(name), formatShape(tensor->shape),
                            formatShape(weight.shape));
        return false;
      }
      const bool q4 = tensor->ggmlBlocks == int32_t(support::GgmlType::Q4_0);
      const bool q8 = tensor->ggmlBlocks == int32_t(support::GgmlType::Q8_0);
      if ((weight.dtype == WeightDType::Int4 && q4) ||
          (weight.dtype == WeightDType::Int8 && q8 && weight.group == 32) ||
          (isKQuant(weight.dtype) &&
           tensor->ggmlBlocks == ggmlTypeOf(weight.dtype))) {
        entry.stored = true;
        if (weight.panel > 0)
          entry.move = Found::Move::ToPanels;
      } else if (weight.dtype == WeightDType::Int8 && weight.group == 32 &&
                 transcodesToInt8(tensor->ggmlBlocks)) {
        // Q5_0, IQ4_NL: the same values as int8 blocks of 32, exactly.
        entry.stored = true;
        entry.move = Found::Move::ToInt8;
      } else if (!canDequantizeGgml(tensor->ggmlBlocks)) {
        error = fmt::format("{}: tensor {} has ggml type {}, which tfmc does "
                            "not convert (it converts F32, F16, BF16, Q8_0, "
                            "Q4_0, Q5_0, IQ4_NL, Q4_K, Q5_K and Q6_K)",
                            path, support::quote(name),
                            ggmlBlockName(tensor->ggmlBlocks));
        return false;
      }
    } else if (weight.dtype != WeightDType::F32 && tensor->dtype == stored &&
        (integer || !weight.transposed || writtenByConvertWeights(metadata))) {
      // Already narrow: the plan's [rows, cols] (int8, int4: [rows, blocks,
      // block bytes], or in block panels [rows / 16, blocks, 16 · block
      // bytes]); blocks in the other layout are moved at load.
      PlanWeight other = weight;
      other.panel = weight.panel > 0 ? 0 : format::kBlockPanelRows;
      const bool otherLayout =
          integer && !isKQuant(weight.dtype) &&
          tensor->shape != weight.storedShape() &&
          (weight.panel > 0 ||
           (weight.shape[0] % format::kBlockPanelRows == 0 &&
            (weight.dtype == WeightDType::Int4 ||
             weight.group % format::kBlockPanelLaneBytes == 0))) &&
          tensor->shape == other.storedShape();
      if (otherLayout)
        entry.move = weight.panel > 0 ? Found::Move::ToPanels
                                      : Found::Move::ToRows;
      else if (tensor->shape != weight.storedShape()) {
        std::string layout;
        if (weight.dtype == WeightDType::Int4)
          layout = fmt::format(" (int4: Q4_0 blocks of {} values in {} bytes "
                               "over {} columns)",
                               format::kInt4BlockValues,
                               format::kInt4BlockBytes, weight.shape[1]);
        else if (isKQuant(weight.dtype))
          layout = fmt::format(" ({}: super-blocks of {} values in {} bytes "
                               "over {} columns)",
                               weightDTypeName(weight.dtype),
                               format::kKQuantBlockValues, weight.blockBytes(),
                               weight.shape[1]);
        else if (weight.dtype == WeightDType::Int8)
          layout = fmt::format(" (int8: blocks of {} values in {} bytes over "
                               "{} columns; the file was converted with "
                               "another group size, or by a tfmc that kept "
                               "the scales apart)",
                               weight.group, weight.blockBytes(),
                               weight.shape[1]);
        error = fmt::format("{}: tensor {} has shape {}, expected {}{}", path,
                            support::quote(name), formatShape(tensor->shape),
                            formatShape(weight.storedShape()), layout);
        return false;
      }
      entry.stored = true;
    } else if (weight.panel > 0 && weight.dtype == WeightDType::F32 &&
               tensor->dtype == DType::F32 && writtenInPanels(metadata) &&
               tensor->shape == weight.storedShape()) {
      // Already in panels (convert-weights): used in place.
      entry.stored = true;
    } else {
      if (!isFloatSource(tensor->dtype)) {
        error = fmt::format("{}: tensor {} has dtype {}, expected {}{}", path,
                            support::quote(name), dtypeName(tensor->dtype),
                            acceptedDTypes(weight),
                            weight.dtype == WeightDType::F32
                                ? ""
                                : fmt::format(" (the program stores it as {})",
                                              weightDTypeName(weight.dtype)));
        return false;
      }
      // A transposed weight is checked against the file's own shape.
      std::vector<int64_t> fileShape = weight.shape;
      if (weight.transposed)
        std::reverse(fileShape.begin(), fileShape.end());
      // Leading dimensions of one hold the same bytes: Marian's
      // final_logits_bias is a [1, V] buffer for the [V] logits bias.
      std::vector<int64_t> held = tensor->shape;
      if (!weight.transposed)
        while (held.size() > fileShape.size() && held.front() == 1)
          held.erase(held.begin());
      if (held != fileShape) {
        error = fmt::format("{}: tensor {} has shape {}, expected {}", path,
                            support::quote(name), formatShape(tensor->shape),
                            formatShape(fileShape));
        return false;
      }
      entry.stored = weight.dtype == WeightDType::F32 && !weight.transposed &&
                     weight.panel == 0 && tensor->dtype == DType::F32;
    }
    entry.tensor = tensor;
    used.insert(name);
    found.push_back(entry);
  }

  // f32 weights in rows that a linear step reads (its op says so) and that
  // fill a huge page or more: a decode step streams them whole, and from
  // the file's mapping (4 KiB pages, where the hardware prefetchers stop at
  // every page) GPT-2 small's tied 50257 x 768 head read at 26 GB/s
  // against 33 GB/s from huge pages (docs/performance.md, "The tied head").
  std::vector<bool> streamedRows(plan.weights.size(), false);
  if (hugePageBuffers())
    for (const PlanStep &step : plan.steps) {
      if (step.op != "tfm.linear" && step.op != "tfm.gated_linear")
        continue;
      for (const PlanArg &arg : step.args) {
        const PlanValue &value = plan.values[static_cast<std::size_t>(arg.value)];
        if (value.kind != ValueKind::Weight)
          continue;
        const PlanWeight &weight =
            plan.weights[static_cast<std::size_t>(value.index)];
        streamedRows[static_cast<std::size_t>(value.index)] =
            weight.dtype == WeightDType::F32 && weight.panel == 0 &&
            weight.storedBytes() >= int64_t(kHugePageBytes);
      }
    }

  // Pass 2: each weight as the kernels read it. Conversion uses every core
  // (up to 8): GPT-2 small to int8 took 280 ms on one thread and 208 ms on
  // two here (`info --weights`).
  const int threads = static_cast<int>(
      std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  for (std::size_t i = 0; i < plan.weights.size(); ++i) {
    const PlanWeight &weight = plan.weights[i];
    const TensorView &tensor = *found[i].tensor;
    const std::string &name = tensor.name;
    const std::string &path = files.pathOf(name);
    auto keep = [&](AlignedBuffer buffer) {
      const void *data = buffer.data();
      weightCopies.push_back(std::move(buffer));
      return static_cast<const uint8_t *>(data);
    };
    auto outOfMemory = [&](const char *doing, std::size_t bytes) {
      error = fmt::format("{}: out of memory {} tensor {} ({} bytes)", path,
                          doing, support::quote(name), bytes);
      return false;
    };
    auto refused = [&](const QuantizeProblem &problem) {
      error = fmt::format("{}: tensor {} cannot be quantised to {}: {}", path,
                          support::quote(name), weightDTypeName(weight.dtype),
                          problem.what);
      return false;
    };
    // One aligned copy (in huge pages from kHugePageBytes on).
    auto copy = [&](const TensorView &view, const char *doing,
                    const uint8_t *&data) {
      AlignedBuffer buffer = copyToAligned(view);
      if (!buffer.data())
        return outOfMemory(doing, view.bytes);
      copiedBytes += view.bytes;
      data = keep(std::move(buffer));
      return true;
    };
    // In place where aligned, else one aligned copy.
    auto inPlace = [&](const TensorView &view, const uint8_t *&data) {
      if (view.isNaturallyAligned()) {
        data = static_cast<const uint8_t *>(view.data);
        return true;
      }
      return copy(view, "copying to aligned memory", data);
    };

    const uint8_t *data = nullptr;
    if (found[i].stored && found[i].move != Found::Move::None) {
      // Blocks into the program's layout: a new copy (the file's pages are
      // released: they are not read again).
      auto convertStart = std::chrono::steady_clock::now();
      AlignedBuffer moved(static_cast<std::size_t>(weight.storedBytes()));
      if (!moved.data())
        return outOfMemory("laying out in block panels", moved.size());
      const auto *from = static_cast<const uint8_t *>(tensor.data);
      auto *to = static_cast<uint8_t *>(moved.data());
      if (found[i].move == Found::Move::ToInt8) {
        // Q5_0, IQ4_NL: int8 blocks of 32 in rows, then in block panels
        // where the plan stores them so.
        transcodeGgmlToInt8(tensor, to, threads);
        if (weight.panel > 0 && !toBlockPanels(weight, moved, threads))
          return outOfMemory("laying out in block panels", moved.size());
      } else if (found[i].move == Found::Move::ToPanels)
        layOutBlockPanels(from, weight.shape[0], weight.blockRowBytes(),
                          weight.group, weight.dtype == WeightDType::Int4, to,
                          threads);
      else
        blockPanelsToRows(from, weight.shape[0], weight.blockRowBytes(),
                          weight.group, weight.dtype == WeightDType::Int4, to,
                          threads);
      releasePages(tensor.data, tensor.bytes);
      data = keep(std::move(moved));
      loadStats.convertSeconds += secondsSince(convertStart);
      ++loadStats.convertedTensors;
    } else if (found[i].stored && streamedRows[i]) {
      // An f32 weight in rows that a linear streams (a tied embedding's
      // head): copied into huge pages, the file's pages released.
      auto convertStart = std::chrono::steady_clock::now();
      if (!copy(tensor, "copying to huge pages", data))
        return false;
      releasePages(tensor.data, tensor.bytes);
      loadStats.convertSeconds += secondsSince(convertStart);
      ++loadStats.convertedTensors;
    } else if (found[i].stored) {
      if (!inPlace(tensor, data))
        return false;
    } else {
      // F32 rows in the plan's layout: widened (BF16, F16), laid out in
      // panels or transposed once (Conv1D), or realigned, else read in place.
      auto convertStart = std::chrono::steady_clock::now();
      const int64_t count = tensor.numElements();
      const std::size_t f32Bytes = static_cast<std::size_t>(count) * 4;
      AlignedBuffer rows;
      const void *fileRows = tensor.data; // f32, the file's layout
      if (tensor.ggmlBlocks >= 0) {
        rows = AlignedBuffer(f32Bytes);
        if (!rows.data())
          return outOfMemory("dequantizing", f32Bytes);
        dequantizeGgml(tensor, static_cast<float *>(rows.data()), threads);
        fileRows = rows.data();
      } else if (tensor.dtype != DType::F32) {
        rows = AlignedBuffer(f32Bytes);
        if (!rows.data())
          return outOfMemory("widening", f32Bytes);
        auto *wide = static_cast<float *>(rows.data());
        if (tensor.dtype == DType::BF16)
          widenBf16(tensor.data, count, wide, threads);
        else
          widenF16(tensor.data, count, wide, threads);
        fileRows = wide;
      }
      if (weight.panel > 0 && weight.dtype == WeightDType::F32) {
        // In panels (an f32 weight), straight from the file's layout.
        AlignedBuffer panels(f32Bytes);
        if (!panels.data())
          return outOfMemory("laying out in panels", f32Bytes);
        layOutPanels(fileRows, weight.shape[0], weight.shape[1], weight.panel,
                     weight.transposed, static_cast<float *>(panels.data()),
                     threads);
        rows = std::move(panels);
      } else if (weight.transposed) {
        rows = transposeToAligned(fileRows, tensor.shape[0], tensor.shape[1]);
        if (!rows.data())
          return outOfMemory("transposing", f32Bytes);
      } else if (!rows.data() && !tensor.isNaturallyAligned()) {
        rows = copyToAligned(tensor);
        if (!rows.data())
          return outOfMemory("copying to aligned memory", tensor.bytes);
      }
      const float *source = rows.data()
                                ? rows.as<float>()
                                : static_cast<const float *>(tensor.data);
      if (weight.dtype == WeightDType::F32) {
        copiedBytes += f32Bytes;
        data = keep(std::move(rows));
      } else if (weight.dtype == WeightDType::BF16) {
        AlignedBuffer converted(static_cast<std::size_t>(count) * 2);
        if (!converted.data())
          return outOfMemory("converting to bf16", converted.size());
        convertToBf16(source, count, static_cast<uint16_t *>(converted.data()),
                      threads);
        data = keep(std::move(converted));
      } else if (weight.dtype == WeightDType::Int8) {
        AlignedBuffer blocks(static_cast<std::size_t>(weight.storedBytes()));
        if (!blocks.data())
          return outOfMemory("converting to int8", blocks.size());
        QuantizeProblem problem;
        if (!quantizeInt8(source, weight.shape[0], weight.shape[1],
                          weight.group, static_cast<uint8_t *>(blocks.data()),
                          problem, threads))
          return refused(problem);
        if (weight.panel > 0 && !toBlockPanels(weight, blocks, threads))
          return outOfMemory("laying out in block panels", blocks.size());
        data = keep(std::move(blocks));
      } else if (isKQuant(weight.dtype)) {
        AlignedBuffer blocks(static_cast<std::size_t>(weight.storedBytes()));
        if (!blocks.data())
          return outOfMemory("quantising", blocks.size());
        QuantizeProblem problem;
        if (!quantizeKQuant(source, weight.shape[0], weight.shape[1],
                            ggmlTypeOf(weight.dtype),
                            static_cast<uint8_t *>(blocks.data()), problem,
                            threads))
          return refused(problem);
        data = keep(std::move(blocks));
      } else {
        AlignedBuffer blocks(static_cast<std::size_t>(weight.storedBytes()));
        if (!blocks.data())
          return outOfMemory("converting to int4", blocks.size());
        QuantizeProblem problem;
        if (!quantizeInt4(source, weight.shape[0], weight.shape[1],
                          static_cast<uint8_t *>(blocks.data()), problem,
                          threads))
          return refused(problem);
        if (weight.panel > 0 && !toBlockPanels(weight, blocks, threads))
          return outOfMemory("laying out in block panels", blocks.size());
        data = keep(std::move(blocks));
      }
      if (weight.dtype != WeightDType::F32 || tensor.dtype != DType::F32 ||
          weight.panel > 0) {
        loadStats.convertSeconds += secondsSince(convertStart);
        ++loadStats.convertedTensors;
      }
    }
    weightData.push_back(data);
    weightSource.push_back(found[i].tensor);
    loadStats.weightBytes += weight.storedBytes();
  }

  std::vector<std::string> unused;
  for (const TensorView *tensor : files.allTensors())
    if (!used.count(tensor->name) && !isIgnoredBuffer(tensor->name) &&
        !isTiedCopy(files, *tensor, used))
      unused.push_back(tensor->name);
  if (!unused.empty()) {
    std::sort(unused.begin(), unused.end()); // name order across shards
    std::string names;
    for (std::size_t i = 0; i < unused.size() && i < 5; ++i)
      names += (i ? ", " : "") + support::quote(unused[i]);
    if (unused.size() > 5)
      names += fmt::format(" and {} more", unused.size() - 5);
    warning =
        fmt::format("{}: warning: {} {} the model does not use: {}",
                    files.path(), unused.size(),
                    unused.size() == 1 ? "tensor" : "tensors", names);
    std::fprintf(stderr, "%s\n", warning.c_str());
  }
  return true;
}

std::optional<std::vector<TensorView>>
Model::storedWeights(std::string &error) const {
  const Weights &weights = *impl_->weights;
  if (weights.onDevice) {
    error = "the weights of a CUDA program are in GPU memory";
    return std::nullopt;
  }
  std::vector<TensorView> views;
  for (std::size_t i = 0; i < plan_.weights.size(); ++i) {
    const PlanWeight &weight = plan_.weights[i];
    if (weight.dtype == WeightDType::F32) {
      // As f32 (a checkpoint's bf16 norm widened), under the file's name;
      // a transposed one as the source holds it, in the source's layout,
      // which is what loading the written file expects of an f32 weight.
      // One in panels as the program holds it (loaded in place again).
      const TensorView &source = *weights.weightSource[i];
      if (weight.panel > 0) {
        TensorView view = source;
        view.name = weight.name;
        view.dtype = DType::F32;
        view.shape = weight.storedShape();
        view.data = weights.weightData[i];
        view.bytes = static_cast<std::size_t>(weight.storedBytes());
        views.push_back(std::move(view));
        continue;
      }
      if (weight.transposed || source.dtype == DType::F32) {
        views.push_back(source);
        continue;
      }
      TensorView view = source;
      view.dtype = DType::F32;
      view.data = weights.weightData[i];
      view.bytes = static_cast<std::size_t>(weight.storedBytes());
      views.push_back(std::move(view));
      continue;
    }
    TensorView view;
    view.name = weight.name;
    view.dtype = storedDType(weight.dtype);
    view.shape = weight.storedShape();
    view.data = weights.weightData[i];
    view.bytes = static_cast<std::size_t>(weight.storedBytes());
    views.push_back(view);
  }
  return views;
}

} // namespace tfmc::runtime
