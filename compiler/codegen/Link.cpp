//===- Link.cpp - Kernels to objects, objects to programs -----------------===//

#include "compiler/codegen/Link.h"
#include "compiler/codegen/PrefetchHints.h"

#include "compiler/codegen/KernelKey.h"
#include "support/EmbeddedWeights.h"
#include "support/FileIO.h"
#include "support/PlanFormat.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <unistd.h>

#ifndef TFMC_VERSION
#error "TFMC_VERSION must be defined by the build"
#endif

using namespace mlir;

namespace tfmc::codegen {
namespace {

/// Reports codegen's errors at the module: they concern the whole program.
class Linker {
public:
  Linker(llvm::ArrayRef<LinkVariant> variants, const CodegenOptions &options,
         std::vector<VariantCost> &costs)
      : module(variants.front().module), variants(variants), options(options),
        costs(costs) {}

  LogicalResult run();

private:
  LogicalResult fail(const llvm::Twine &message) {
    return module.emitError(message);
  }
  LogicalResult runTool(llvm::StringRef program,
                        llvm::ArrayRef<std::string> arguments,
                        const llvm::Twine &what,
                        std::optional<llvm::StringRef> stdinPath = std::nullopt);
  /// Where a file goes: the user's -o (which may not be a file the compile
  /// read), or the kernel cache.
  enum class Destination { Output, Cache };
  /// Calls `write` with the temporary beside `path` (open, or for a tool
  /// to write by its temporaryPath()), then renames it into place
  /// (support/FileIO's OutputFile and its policy).
  LogicalResult writeAtomically(
      const std::string &path, Destination destination,
      llvm::function_ref<LogicalResult(support::OutputFile &)> write);
  LogicalResult writeText(const std::string &path, const std::string &text);
  /// Appends options.embedWeights to the linked program at `program`, in
  /// support/EmbeddedWeights.h's layout.
  LogicalResult embedWeights(const std::string &program);
  LogicalResult writeScratch(const std::string &path, const std::string &text);
  LogicalResult cachedKernels(const LinkVariant &variant, VariantCost &cost,
                              std::vector<std::string> &objects);
  LogicalResult cachedRuntime(std::vector<std::string> &objects);

  ModuleOp module;
  llvm::ArrayRef<LinkVariant> variants;
  const CodegenOptions &options;
  std::vector<VariantCost> &costs;
  llvm::SmallString<128> work; // scratch directory
};

/// Whether `path` is an object file that defines `symbol`: a cache entry
/// that was truncated or overwritten is compiled again, never linked.
bool isObjectDefining(const std::string &path, llvm::StringRef symbol) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return false;
  auto object = llvm::object::ObjectFile::createObjectFile(
      (*buffer)->getMemBufferRef());
  if (!object) {
    llvm::consumeError(object.takeError());
    return false;
  }
  for (const llvm::object::SymbolRef &sym : (*object)->symbols()) {
    llvm::Expected<llvm::StringRef> name = sym.getName();
    if (!name) {
      llvm::consumeError(name.takeError());
      return false;
    }
    llvm::Expected<uint32_t> flags = sym.getFlags();
    if (!flags) {
      llvm::consumeError(flags.takeError());
      return false;
    }
    if (*name == symbol && !(*flags & llvm::object::SymbolRef::SF_Undefined))
      return true;
  }
  return false;
}

LogicalResult Linker::runTool(llvm::StringRef program,
                              llvm::ArrayRef<std::string> arguments,
                              const llvm::Twine &what,
                              std::optional<llvm::StringRef> stdinPath) {
  llvm::ErrorOr<std::string> path = llvm::sys::findProgramByName(program);
  if (!path)
    return fail(llvm::Twine("cannot find '") + program +
                "' on PATH, needed for " + what);
  std::vector<llvm::StringRef> argv{*path};
  for (const std::string &argument : arguments)
    argv.push_back(argument);
  std::string errorLog = (work + "/tool-stderr.txt").str();
  std::optional<llvm::StringRef> redirects[] = {stdinPath, std::nullopt,
                                                llvm::StringRef(errorLog)};
  std::string error;
  int status = llvm::sys::ExecuteAndWait(*path, argv, std::nullopt, redirects,
                                         0, 0, &error);
  if (status == 0)
    return success();
  std::ifstream log(errorLog);
  std::string firstLine;
  std::getline(log, firstLine);
  return fail(what + " failed (" + program + " exit " + llvm::Twine(status) +
              "): " + (firstLine.empty() ? error : firstLine));
}

LogicalResult Linker::writeAtomically(
    const std::string &path, Destination destination,
    llvm::function_ref<LogicalResult(support::OutputFile &)> write) {
  bool output = destination == Destination::Output;
  std::string error;
  std::optional<support::OutputFile> file = support::OutputFile::create(
      output ? "-o" : "", path, {}, /*refuseFilesRead=*/output, error);
  if (!file)
    return fail(error);
  // A failure leaves the path as it was (~OutputFile removes the temporary).
  if (failed(write(*file)))
    return failure();
  if (!file->commit(error))
    return fail(error);
  return success();
}

/// Writes `text` to `path`, a file of the private scratch directory.
bool writeFile(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  return bool(out);
}

LogicalResult Linker::writeScratch(const std::string &path,
                                   const std::string &text) {
  if (!writeFile(path, text))
    return fail("cannot write '" + path + "'");
  return success();
}

LogicalResult Linker::embedWeights(const std::string &program) {
  const std::string &weights = options.embedWeights;
  std::ifstream in(weights, std::ios::binary);
  std::ofstream out(program, std::ios::binary | std::ios::app);
  if (!in)
    return fail("--embed-weights: cannot read '" + weights + "'");
  out.seekp(0, std::ios::end);
  const uint64_t linked = static_cast<uint64_t>(out.tellp());
  const uint64_t offset = (linked + format::kEmbeddedAlignment - 1) /
                          format::kEmbeddedAlignment *
                          format::kEmbeddedAlignment;
  out << std::string(offset - linked, '\0') << in.rdbuf();
  const uint64_t size = static_cast<uint64_t>(out.tellp()) - offset;
  const auto trailer = format::embeddedTrailer({offset, size});
  out.write(reinterpret_cast<const char *>(trailer.data()), trailer.size());
  out.close();
  if (!out || in.bad())
    return fail("--embed-weights: cannot append '" + weights + "' to '" +
                program + "'");
  return success();
}

LogicalResult Linker::writeText(const std::string &path,
                                const std::string &text) {
  return writeAtomically(path, Destination::Output,
                         [&](support::OutputFile &file) {
    std::string error;
    if (!file.write(text.data(), text.size(), error))
      return fail(error);
    return success();
  });
}

LogicalResult Linker::cachedKernels(const LinkVariant &variant,
                                    VariantCost &cost,
                                    std::vector<std::string> &objects) {
  const target::TargetDescription &target = variant.target;
  auto addSize = [&](const std::string &object) {
    uint64_t size = 0;
    if (!llvm::sys::fs::file_size(object, size))
      cost.kernelCodeBytes += int64_t(size);
  };
  for (const auto &[name, kernel] : variant.lowered.kernels) {
    std::string object = options.cacheDir + "/" + name + ".o";
    objects.push_back(object);
    if (llvm::sys::fs::exists(object)) {
      if (isObjectDefining(object, name + "_argv")) {
        if (options.verbose)
          llvm::errs() << "tfmc: cached " << name << "\n";
        addSize(object);
        continue;
      }
      llvm::errs() << "tfmc: warning: the kernel cache entry '" << object
                   << "' is not a valid object; compiling it again\n";
    }
    if (options.verbose)
      llvm::errs() << "tfmc: compiling " << name << " ("
                   << kernel.op->getName() << ")\n";
    if (failed(writeAtomically(object, Destination::Cache,
                               [&](support::OutputFile &file) {
          const std::string &path = file.temporaryPath();
          std::string error;
          if (!compileKernel(kernel.spec, name, target, path, error))
            return fail(error);
          if (target.isGpu())
            return success();
          PrefetchRewrite rewrite;
          if (!promotePrefetchHintsInObject(path, rewrite, error))
            return fail(error);
          if (rewrite.undecodable)
            llvm::errs() << "tfmc: warning: kernel " << name
                         << ": code that LLVM's X86 disassembler cannot "
                            "decode; its prefetches stay non-temporal\n";
          return success();
        })))
      return failure();
    ++cost.compiledKernels;
    addSize(object);
  }
  return success();
}

LogicalResult Linker::cachedRuntime(std::vector<std::string> &objects) {
  // One Halide runtime per binary; a CUDA target's includes Halide's CUDA
  // runtime, which loads the driver (libcuda) when the program runs. Keyed
  // like the kernels (the generator hash covers Halide's header), so a new
  // Halide never reuses an old runtime. Compiled for the narrowest
  // variant: every CPU that runs one of the variants runs it.
  const target::TargetDescription &target = variants.back().target;
  std::string object =
      options.cacheDir + "/halide_runtime_" +
      hexDigest(target.halideTarget + "|" + kernelGeneratorHash()) + ".o";
  objects.push_back(object);
  if (llvm::sys::fs::exists(object) &&
      isObjectDefining(object, "halide_default_do_par_for"))
    return success();
  return writeAtomically(object, Destination::Cache,
                         [&](support::OutputFile &file) {
    std::string error;
    if (compileRuntime(target, file.temporaryPath(), error))
      return success();
    return fail(error);
  });
}

LogicalResult Linker::run() {
  if (std::error_code ec = llvm::sys::fs::create_directories(options.cacheDir))
    return fail("cannot create the kernel cache '" + options.cacheDir +
                "': " + ec.message());
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("tfmc-link", work))
    return fail("cannot create a temporary directory: " + ec.message());
  auto cleanup = llvm::make_scope_exit(
      [&] { llvm::sys::fs::remove_directories(work); });

  std::vector<std::string> objects;
  costs.resize(variants.size());
  for (size_t i = 0; i < variants.size(); ++i) {
    auto start = std::chrono::steady_clock::now();
    if (failed(cachedKernels(variants[i], costs[i], objects)))
      return failure();
    costs[i].seconds += std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - start)
                            .count();
  }
  if (failed(cachedRuntime(objects)))
    return failure();

  // The glue: each variant's kernel table and plans, and the CPU targets.
  std::string glueC = (work + "/glue.c").str();
  std::string glueO = (work + "/glue.o").str();
  std::vector<GlueVariant> glue;
  for (const LinkVariant &variant : variants) {
    GlueVariant &entry = glue.emplace_back();
    // `host` names the instruction set it resolved to: on another CPU,
    // "x86-64-avx512 needs avx512f ..." says what the program is.
    entry.target = variant.target.hostOf.empty() ? variant.target.name
                                                 : variant.target.hostOf;
    entry.features = variant.target.featureList();
    for (const auto &kernel : variant.lowered.kernels)
      entry.kernelNames.push_back(kernel.first);
    entry.plans = variant.lowered.plans;
  }
  std::vector<std::pair<std::string, std::string>> cpuTargets;
  for (const target::TargetDescription *t : target::cpuTargets())
    cpuTargets.emplace_back(t->name, t->featureList());
  if (failed(writeScratch(glueC, glueSource(glue, cpuTargets, TFMC_VERSION))) ||
      failed(runTool("cc", {"-c", "-O1", "-o", glueO, glueC},
                     "compiling the entry point")))
    return failure();
  objects.insert(objects.begin(), glueO);

  const std::string &output = options.outputPath;
  const json &plan = variants.front().lowered.plans.front();
  // A model with a decoder (prefill and decode_step entry points) can
  // generate: its programs and libraries also link libtfmc_generate.a and
  // its NAME.h declares tfmc_generate.h's functions.
  bool generates = false;
  for (const json &entry : variants.front().lowered.plans)
    generates |= entry.value("entry", "") == tfmc::plan::entry::kDecodeStep;

  // The runtime's layers (runtime/CMakeLists.txt), above the core first:
  // the executable's command line needs them all; a library only the core,
  // and generation when the model generates. Tokenizers (and so
  // SentencePiece, Oniguruma, utf8proc) and the server (and so cpp-httplib) are
  // the command line's alone.
  const std::string &rt = options.runtimeDir;
  std::vector<std::string> runtimeLibraries;
  if (options.artifact == Artifact::Executable) {
    runtimeLibraries.push_back(rt + "/libtfmc_runtime_main.a");
    runtimeLibraries.push_back(rt + "/libtfmc_server.a");
  }
  if (generates || options.artifact == Artifact::Executable)
    runtimeLibraries.push_back(rt + "/libtfmc_generate.a");
  if (options.artifact == Artifact::Executable) {
    runtimeLibraries.push_back(rt + "/libtfmc_tokenizers.a");
    runtimeLibraries.push_back(rt + "/libtfmc_serve.a");
  }
  for (const char *core : {"/libtfmc_runtime.a", "/libtfmc_runtime_safetensors.a",
                           "/libtfmc_support.a"})
    runtimeLibraries.push_back(rt + core);
  if (options.artifact != Artifact::Object)
    for (const std::string &library : runtimeLibraries)
      if (!llvm::sys::fs::exists(library))
        return fail("tfmc's runtime library '" + library +
                    "' is missing (set TFMC_RUNTIME_DIR)");
  std::vector<std::string> systemLibraries{"-lfmt"};
  if (options.artifact == Artifact::Executable)
    systemLibraries.insert(systemLibraries.end(),
                           {"-lsentencepiece", "-lonig", "-lutf8proc",
                            "-lcpp-httplib"});
  systemLibraries.insert(systemLibraries.end(), {"-lpthread", "-ldl", "-lm"});

  switch (options.artifact) {
  case Artifact::Executable:
    return writeAtomically(output, Destination::Output,
                           [&](support::OutputFile &file) {
      std::vector<std::string> argv{"-o", file.temporaryPath()};
      argv.insert(argv.end(), objects.begin(), objects.end());
      argv.push_back("-Wl,--start-group");
      argv.insert(argv.end(), runtimeLibraries.begin(), runtimeLibraries.end());
      argv.push_back("-Wl,--end-group");
      argv.insert(argv.end(), systemLibraries.begin(), systemLibraries.end());
      argv.insert(argv.end(), options.runtimeLinkFlags.begin(),
                  options.runtimeLinkFlags.end());
      if (failed(runTool("c++", argv, "linking " + output)))
        return failure();
      return options.embedWeights.empty()
                 ? success()
                 : embedWeights(file.temporaryPath());
    });
  case Artifact::Object:
    return writeAtomically(output + ".o", Destination::Output,
                           [&](support::OutputFile &file) {
      std::vector<std::string> argv{"-r", "-o", file.temporaryPath()};
      argv.insert(argv.end(), objects.begin(), objects.end());
      return runTool("ld", argv, "linking " + output + ".o");
    });
  case Artifact::Library: {
    llvm::StringRef directory = llvm::sys::path::parent_path(output);
    std::string stem = llvm::sys::path::filename(output).str();
    std::string library =
        (directory.empty() ? "" : directory.str() + "/") + "lib" + stem + ".a";
    if (failed(writeAtomically(library, Destination::Output,
                               [&](support::OutputFile &file) {
          const std::string &temporary = file.temporaryPath();
          // ar -M creates the archive itself: start from no file.
          llvm::sys::fs::remove(temporary);
          std::ostringstream mri;
          mri << "CREATE " << temporary << "\n";
          for (const std::string &object : objects)
            mri << "ADDMOD " << object << "\n";
          for (const std::string &runtimeLibrary : runtimeLibraries)
            mri << "ADDLIB " << runtimeLibrary << "\n";
          mri << "SAVE\nEND\n";
          std::string script = (work + "/archive.mri").str();
          if (failed(writeScratch(script, mri.str())))
            return failure();
          return runTool("ar", {"-M"}, "archiving " + library,
                         llvm::StringRef(script));
        })))
      return failure();
    std::vector<std::string> headers{options.runtimeHeader};
    if (generates)
      headers.push_back(options.generateHeader);
    std::ostringstream api;
    for (const std::string &path : headers) {
      std::ifstream file(path);
      if (!file)
        return fail("cannot read tfmc's C header '" + path + "'");
      api << file.rdbuf();
    }
    std::ostringstream header;
    header << "/* " << stem << ".h: the C API of the tfmc-compiled model '"
           << plan["model"].get<std::string>() << "'.\n"
           << " * Link: cc app.c lib" << stem
           << ".a -lstdc++ -lfmt -lpthread -ldl -lm";
    for (const std::string &flag : options.runtimeLinkFlags)
      header << " " << flag;
    header << "\n * Inputs:";
    for (const json &input : plan["inputs"])
      header << " " << input["name"].get<std::string>() << " [B, "
             << input["dims"][1][0].get<std::string>() << "]";
    header << "; output: " << plan["output"]["name"].get<std::string>()
           << ". */\n";
    // The weight dtype as a macro too (tfmc_weight_dtype() at run time):
    // the narrowest any weight has (int4, int8, bf16, f32).
    const auto &widestFirst = tfmc::plan::dtype::kWidestFirst;
    auto narrowness = [&](const std::string &dtype) {
      return std::find(std::begin(widestFirst), std::end(widestFirst), dtype) -
             std::begin(widestFirst);
    };
    std::string weightDType = tfmc::plan::dtype::kF32;
    for (const json &weight : plan["weights"]) {
      std::string dtype = weight.value("dtype", tfmc::plan::dtype::kF32);
      if (narrowness(dtype) > narrowness(weightDType))
        weightDType = dtype;
    }
    header << "#define TFMC_WEIGHT_DTYPE \"" << weightDType << "\"\n"
           << api.str();
    return writeText(output + ".h", header.str());
  }
  case Artifact::Halide:
    break;
  }
  return success();
}

} // namespace

LogicalResult linkArtifact(llvm::ArrayRef<LinkVariant> variants,
                           const CodegenOptions &options,
                           std::vector<VariantCost> &costs) {
  return Linker(variants, options, costs).run();
}

} // namespace tfmc::codegen
