//===- Settings.h - The model settings of a .tfm file, one table -*- C++ -*-===//
//
// Every model setting (`vocab = 50257`, `norm = pre`, ...) is one row of
// modelSettings(): its name, what it takes (a positive integer, a positive
// number, or one of a fixed set of spellings), the Model member it sets,
// and when `--emit ast` prints it. The parser (Parser.cpp) and the AST
// printer (AST.cpp's dumpModel) both walk this table, so that adding a
// setting is one row here (and its member in AST.h); docs/language.md's
// table lists them for users.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_COMPILER_FRONTEND_SETTINGS_H
#define TFMC_COMPILER_FRONTEND_SETTINGS_H

#include "compiler/frontend/AST.h"

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tfmc::frontend {

/// One model setting.
struct Setting {
  enum class Kind { PositiveInt, PositiveNumber, PositiveNumbers, Choice };
  const char *name = nullptr;
  Kind kind = Kind::PositiveInt;
  /// The member a PositiveInt or PositiveNumber setting sets.
  int64_t Model::*integer = nullptr;
  double Model::*number = nullptr;
  /// The member a PositiveNumbers setting (`(1, 1.5, 2)`) sets.
  std::vector<double> Model::*numbers = nullptr;
  /// A Choice's spellings, in the order error messages list them, and the
  /// model's value as an index into them / a value set from one.
  std::vector<std::string> spellings;
  std::function<size_t(const Model &)> chosen;
  std::function<void(Model &, size_t)> choose;
  /// Whether dumpModel prints it for a model (null: always).
  bool (*shown)(const Setting &, const Model &) = nullptr;
};

/// Every setting, in the order dumpModel prints them (and "known settings
/// are ..." lists them).
const std::vector<Setting> &modelSettings();

/// The setting named `name`, or null.
const Setting *findSetting(std::string_view name);

/// The setting's value in `model` as `--emit ast` prints it (an integer 0,
/// an unset d_ff, as "unset").
std::string settingValue(const Setting &setting, const Model &model);

/// Whether dumpModel prints the setting for `model`.
bool settingShown(const Setting &setting, const Model &model);

} // namespace tfmc::frontend

#endif // TFMC_COMPILER_FRONTEND_SETTINGS_H
