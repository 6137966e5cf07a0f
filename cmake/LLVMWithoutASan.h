// Force-included (-include) before anything else into every target that
// includes LLVM or MLIR headers, in sanitizer builds (TFMC_SANITIZE, TFMC_FUZZ).
//
// Debian's libLLVM and libMLIR are built without AddressSanitizer, but
// llvm/Support/Compiler.h decides LLVM_ADDRESS_SANITIZER_BUILD from the flags
// of the file being compiled, not from how LLVM was built. Inline allocator
// code in the headers (BumpPtrAllocatorImpl::StartNewSlab/Allocate/Deallocate,
// Recycler) then differs between our instrumented copies and the library's:
// ours poison a whole new slab and unpoison each allocation; the library's do
// neither. MLIR's StorageUniquer allocators are shared by both sides, so a slab
// that our copy of StartNewSlab poisoned (a tfm attribute's storage built in
// our code) is then carved up by libMLIR's inline Allocate, which never
// unpoisons; the next read of such an attribute from our code is reported as
// use-after-poison although the memory is valid.
//
// This makes the headers tell the truth: LLVM is not an ASan build, so every
// inline copy behaves like the library's and no allocator memory is poisoned.
// Real heap errors are still found (malloc/new are instrumented); only the
// bump allocators' intra-slab checks are lost, as in libMLIR itself.
#ifndef TFMC_CMAKE_LLVMWITHOUTASAN_H
#define TFMC_CMAKE_LLVMWITHOUTASAN_H

#ifdef __cplusplus
#include "llvm/Support/Compiler.h"

#undef LLVM_ADDRESS_SANITIZER_BUILD
#define LLVM_ADDRESS_SANITIZER_BUILD 0
#define __asan_poison_memory_region(p, size) ((void)(p), (void)(size))
#define __asan_unpoison_memory_region(p, size) ((void)(p), (void)(size))
#endif

#endif // TFMC_CMAKE_LLVMWITHOUTASAN_H
