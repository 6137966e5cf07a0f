// TEMPORARY stand-in (lead's local build only; replaced by wip-stream)
#ifndef TFMC_RUNTIME_TEXTSTREAM_H
#define TFMC_RUNTIME_TEXTSTREAM_H
#include "runtime/Tokenizer.h"
#include <string>
#include <vector>
namespace tfmc::runtime {
class TextStream {
public:
  TextStream(const Tokenizer &t, std::vector<int64_t> prompt, std::vector<std::string> stops)
      : t(t), prompt(std::move(prompt)), stops(std::move(stops)) {}
  std::string push(int64_t token, bool &stopped) { tokens.push_back(token); stopped = false; return {}; }
  std::string finish() {
    std::string before = t.decode(prompt); std::vector<int64_t> all = prompt;
    all.insert(all.end(), tokens.begin(), tokens.end()); std::string w = t.decode(all);
    return Tokenizer::toValidUtf8(w.substr(std::min(before.size(), w.size()))); }
  const Tokenizer &t; std::vector<int64_t> prompt, tokens; std::vector<std::string> stops;
};
}
#endif
