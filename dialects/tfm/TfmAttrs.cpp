//===- TfmAttrs.cpp - tfm attributes --------------------------------------===//

#include "dialects/tfm/TfmDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

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

// #tfm.rope_scaling<linear, factor = F>
// #tfm.rope_scaling<llama3, factor = F, low_freq_factor = L,
//                   high_freq_factor = H, original_max_len = N>
// #tfm.rope_scaling<longrope, attention_factor = A, factors = [f0, f1, ...]>
Attribute RopeScalingAttr::parse(AsmParser &parser, Type) {
  StringRef kindName;
  SMLoc kindLoc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeyword(&kindName))
    return {};
  std::optional<RopeScalingKind> kind = symbolizeRopeScalingKind(kindName);
  if (!kind) {
    parser.emitError(kindLoc, "unknown rope scaling '")
        << kindName << "', expected linear, llama3 or longrope";
    return {};
  }
  auto number = [&](StringRef name, double &value) {
    return failed(parser.parseComma()) || failed(parser.parseKeyword(name)) ||
           failed(parser.parseEqual()) || failed(parser.parseFloat(value));
  };
  double factor = 0, low = 0, high = 0;
  int64_t original = 0;
  SmallVector<double> factors;
  if (*kind == RopeScalingKind::longrope) {
    if (number("attention_factor", factor) || parser.parseComma() ||
        parser.parseKeyword("factors") || parser.parseEqual() ||
        parser.parseCommaSeparatedList(
            AsmParser::Delimiter::Square, [&]() -> ParseResult {
              return parser.parseFloat(factors.emplace_back());
            }))
      return {};
  } else if (number("factor", factor)) {
    return {};
  }
  if (*kind == RopeScalingKind::llama3 &&
      (number("low_freq_factor", low) || number("high_freq_factor", high) ||
       parser.parseComma() || parser.parseKeyword("original_max_len") ||
       parser.parseEqual() || parser.parseInteger(original)))
    return {};
  if (parser.parseGreater())
    return {};
  return RopeScalingAttr::getChecked(
      [&] { return parser.emitError(parser.getNameLoc()); },
      parser.getContext(), *kind, APFloat(factor), APFloat(low), APFloat(high),
      original, DenseF64ArrayAttr::get(parser.getContext(), factors));
}

void RopeScalingAttr::print(AsmPrinter &printer) const {
  printer << '<' << stringifyRopeScalingKind(getKind());
  if (getKind() == RopeScalingKind::longrope) {
    printer << ", attention_factor = " << getFactor().convertToDouble()
            << ", factors = [";
    llvm::interleaveComma(getFrequencyFactors().asArrayRef(), printer);
    printer << "]>";
    return;
  }
  printer << ", factor = " << getFactor().convertToDouble();
  if (getKind() == RopeScalingKind::llama3)
    printer << ", low_freq_factor = " << getLowFreqFactor().convertToDouble()
            << ", high_freq_factor = " << getHighFreqFactor().convertToDouble()
            << ", original_max_len = " << getOriginalMaxLen();
  printer << '>';
}

LogicalResult
RopeScalingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        RopeScalingKind kind, APFloat factor,
                        APFloat lowFreqFactor, APFloat highFreqFactor,
                        int64_t originalMaxLen,
                        DenseF64ArrayAttr frequencyFactors) {
  auto positive = [](const APFloat &value) {
    return value.isFiniteNonZero() && !value.isNegative();
  };
  if (!positive(factor))
    return emitError() << "rope scaling factor must be positive and finite, "
                          "got "
                       << factor.convertToDouble();
  const size_t count =
      frequencyFactors ? frequencyFactors.asArrayRef().size() : 0;
  if (kind == RopeScalingKind::longrope) {
    if (count == 0)
      return emitError() << "longrope scaling needs a factor per frequency";
    for (double each : frequencyFactors.asArrayRef())
      if (!(each > 0) || !std::isfinite(each))
        return emitError() << "longrope factors must be positive and finite, "
                              "got "
                           << each;
    return success();
  }
  if (count != 0)
    return emitError() << stringifyRopeScalingKind(kind)
                       << " rope scaling takes no per-frequency factors";
  if (kind != RopeScalingKind::llama3)
    return success();
  if (!positive(lowFreqFactor) || !positive(highFreqFactor) ||
      highFreqFactor.convertToDouble() <= lowFreqFactor.convertToDouble())
    return emitError() << "llama3 rope scaling needs 0 < low_freq_factor < "
                          "high_freq_factor, got "
                       << lowFreqFactor.convertToDouble() << " and "
                       << highFreqFactor.convertToDouble();
  if (originalMaxLen <= 0)
    return emitError() << "llama3 rope scaling's original_max_len must be "
                          "positive, got "
                       << originalMaxLen;
  return success();
}
