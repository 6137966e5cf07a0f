//===- PrefetchHints.cpp - Rewrite Halide's x86 prefetches to prefetcht0 --===//

#include "compiler/codegen/PrefetchHints.h"

#include "llvm/MC/MCAsmInfo.h"
#include "llvm/MC/MCContext.h"
#include "llvm/MC/MCDisassembler/MCDisassembler.h"
#include "llvm/MC/MCInst.h"
#include "llvm/MC/MCInstrInfo.h"
#include "llvm/MC/MCRegisterInfo.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/MCTargetOptions.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"

#include <fstream>
#include <memory>
#include <vector>

extern "C" void LLVMInitializeX86TargetInfo();
extern "C" void LLVMInitializeX86TargetMC();
extern "C" void LLVMInitializeX86Disassembler();

namespace tfmc::codegen {
namespace {

constexpr const char *kTriple = "x86_64-unknown-linux-gnu";

/// LLVM's X86 disassembler and the tables it needs, made once.
struct Disassembler {
  Disassembler() {
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86Disassembler();
    std::string error;
    const llvm::Target *target =
        llvm::TargetRegistry::lookupTarget(kTriple, error);
    if (!target)
      return;
    llvm::Triple triple(kTriple);
    registers.reset(target->createMCRegInfo(kTriple));
    asmInfo.reset(target->createMCAsmInfo(*registers, kTriple, options));
    // No CPU: the X86 disassembler decodes every extension (AVX-512 too).
    subtarget.reset(target->createMCSubtargetInfo(kTriple, "", ""));
    instructions.reset(target->createMCInstrInfo());
    if (!registers || !asmInfo || !subtarget || !instructions)
      return;
    context = std::make_unique<llvm::MCContext>(triple, asmInfo.get(),
                                                registers.get(), subtarget.get());
    decoder.reset(target->createMCDisassembler(*subtarget, *context));
  }

  llvm::MCTargetOptions options;
  std::unique_ptr<llvm::MCRegisterInfo> registers;
  std::unique_ptr<llvm::MCAsmInfo> asmInfo;
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget;
  std::unique_ptr<llvm::MCInstrInfo> instructions;
  std::unique_ptr<llvm::MCContext> context;
  std::unique_ptr<llvm::MCDisassembler> decoder;
};

const Disassembler &disassembler() {
  static const Disassembler instance;
  return instance;
}

bool isLegacyPrefix(uint8_t byte) {
  switch (byte) {
  case 0x26: case 0x2E: case 0x36: case 0x3E: case 0x64: case 0x65:
  case 0x66: case 0x67: case 0xF2: case 0xF3:
    return true;
  default:
    return byte >= 0x40 && byte <= 0x4F; // REX
  }
}

/// The index of the ModRM byte of a prefetch instruction's bytes
/// (prefixes, 0F 18, ModRM, ...), or -1.
int prefetchModRm(llvm::ArrayRef<uint8_t> bytes) {
  size_t i = 0;
  while (i < bytes.size() && isLegacyPrefix(bytes[i]))
    ++i;
  if (i + 2 < bytes.size() && bytes[i] == 0x0F && bytes[i + 1] == 0x18)
    return int(i + 2);
  return -1;
}

} // namespace

PrefetchRewrite promotePrefetchHints(llvm::MutableArrayRef<uint8_t> code) {
  PrefetchRewrite result;
  const Disassembler &dis = disassembler();
  if (!dis.decoder) {
    result.undecodable = 1;
    return result;
  }
  // Decode all of it first: patch only code whose every instruction
  // boundary is known.
  std::vector<size_t> prefetches;
  for (size_t offset = 0; offset < code.size();) {
    llvm::MCInst inst;
    uint64_t size = 0;
    llvm::ArrayRef<uint8_t> rest(code.data() + offset, code.size() - offset);
    if (dis.decoder->getInstruction(inst, size, rest, offset, llvm::nulls()) !=
            llvm::MCDisassembler::Success ||
        size == 0) {
      result.undecodable = 1;
      return result;
    }
    if (dis.instructions->getName(inst.getOpcode()) == "PREFETCHNTA") {
      int modRm = prefetchModRm(rest.take_front(size));
      if (modRm < 0 || ((rest[modRm] >> 3) & 7) != 0) {
        result.undecodable = 1;
        return result;
      }
      prefetches.push_back(offset + size_t(modRm));
    }
    offset += size;
  }
  // /0 (prefetchnta) -> /1 (prefetcht0): the reg field is bits 3-5.
  for (size_t at : prefetches)
    code[at] |= 1 << 3;
  result.rewritten = unsigned(prefetches.size());
  return result;
}

bool promotePrefetchHintsInObject(const std::string &path,
                                  PrefetchRewrite &result, std::string &error) {
  result = {};
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    error = "cannot read '" + path + "': " + buffer.getError().message();
    return false;
  }
  std::vector<uint8_t> bytes((*buffer)->getBufferStart(),
                             (*buffer)->getBufferEnd());
  auto object = llvm::object::ObjectFile::createObjectFile(
      (*buffer)->getMemBufferRef());
  if (!object) {
    error = "cannot parse the object '" + path +
            "': " + llvm::toString(object.takeError());
    return false;
  }
  if ((*object)->getArch() != llvm::Triple::x86_64)
    return true;
  for (const llvm::object::SectionRef &section : (*object)->sections()) {
    if (!section.isText())
      continue;
    llvm::Expected<llvm::StringRef> contents = section.getContents();
    if (!contents) {
      error = "cannot read a section of '" + path +
              "': " + llvm::toString(contents.takeError());
      return false;
    }
    size_t start = size_t(contents->data() - (*buffer)->getBufferStart());
    PrefetchRewrite part = promotePrefetchHints(
        llvm::MutableArrayRef<uint8_t>(bytes.data() + start, contents->size()));
    result.rewritten += part.rewritten;
    result.undecodable += part.undecodable;
  }
  if (result.rewritten == 0)
    return true;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()),
            std::streamsize(bytes.size()));
  out.close();
  if (!out) {
    error = "cannot write '" + path + "'";
    return false;
  }
  return true;
}

} // namespace tfmc::codegen
