//===- TfmAttrs.cpp - tfm attributes --------------------------------------===//

#include "dialects/tfm/TfmDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace tfmc::tfm;

#include "dialects/tfm/TfmEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/tfm/TfmAttrs.cpp.inc"

void TfmDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/tfm/TfmAttrs.cpp.inc"
      >();
}

// #tfm.mask<none> | #tfm.mask<term (, term)*>, term = causal | padding | window(N)
Attribute MaskAttr::parse(AsmParser &parser, Type) {
  bool causal = false, padding = false;
  int64_t window = 0;
  if (parser.parseLess())
    return {};
  if (succeeded(parser.parseOptionalKeyword("none"))) {
    if (parser.parseGreater())
      return {};
    return MaskAttr::getChecked([&] { return parser.emitError(parser.getNameLoc()); },
                                parser.getContext(), false, false, 0);
  }
  do {
    StringRef term;
    SMLoc termLoc = parser.getCurrentLocation();
    if (parser.parseKeyword(&term))
      return {};
    bool seen = false;
    if (term == "causal") {
      seen = causal;
      causal = true;
    } else if (term == "padding") {
      seen = padding;
      padding = true;
    } else if (term == "window") {
      seen = window != 0;
      if (parser.parseLParen() || parser.parseInteger(window) ||
          parser.parseRParen())
        return {};
      if (window <= 0) {
        parser.emitError(termLoc, "mask window must be positive, got ") << window;
        return {};
      }
    } else {
      parser.emitError(termLoc, "unknown mask kind '")
          << term << "', expected causal, padding, window(N) or none";
      return {};
    }
    if (seen) {
      parser.emitError(termLoc, "mask kind '") << term << "' given twice";
      return {};
    }
  } while (succeeded(parser.parseOptionalComma()));
  if (parser.parseGreater())
    return {};
  return MaskAttr::getChecked([&] { return parser.emitError(parser.getNameLoc()); },
                              parser.getContext(), causal, padding, window);
}

void MaskAttr::print(AsmPrinter &printer) const {
  printer << '<';
  if (isNone()) {
    printer << "none>";
    return;
  }
  llvm::SmallVector<std::string, 3> terms;
  if (getCausal())
    terms.push_back("causal");
  if (getPadding())
    terms.push_back("padding");
  if (getWindow() != 0)
    terms.push_back("window(" + std::to_string(getWindow()) + ")");
  llvm::interleaveComma(terms, printer);
  printer << '>';
}

LogicalResult MaskAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               bool causal, bool padding, int64_t window) {
  if (window < 0)
    return emitError() << "mask window must be positive, got " << window;
  return success();
}
