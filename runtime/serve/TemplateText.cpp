//===- TemplateText.cpp - Python's str operations on UTF-8 ----------------===//

#include "runtime/serve/TemplateText.h"

#include "support/Utf8.h"

#include <algorithm>

namespace tfmc::runtime::jinja {

uint32_t nextCodePoint(std::string_view text, std::size_t &pos) {
  uint32_t cp = 0;
  std::size_t length = support::decodeUtf8(text, pos, cp);
  // Strings are checked well-formed where they enter the engine; a stray
  // byte still advances (as U+FFFD) rather than looping.
  if (length == 0) {
    ++pos;
    return 0xFFFD;
  }
  pos += length;
  return cp;
}

std::vector<std::size_t> codePointOffsets(std::string_view text) {
  std::vector<std::size_t> offsets;
  offsets.reserve(text.size() + 1);
  for (std::size_t pos = 0; pos < text.size();) {
    offsets.push_back(pos);
    nextCodePoint(text, pos);
  }
  offsets.push_back(text.size());
  return offsets;
}

std::size_t codePointCount(std::string_view text) {
  std::size_t count = 0;
  for (unsigned char byte : text)
    count += (byte & 0xC0) != 0x80;
  return count;
}

bool isPythonSpace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

namespace {

/// The code points of `text` with their byte ranges.
struct CodePoint {
  uint32_t cp;
  std::size_t begin, end;
};

std::vector<CodePoint> decodeAll(std::string_view text) {
  std::vector<CodePoint> out;
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t begin = pos;
    uint32_t cp = nextCodePoint(text, pos);
    out.push_back({cp, begin, pos});
  }
  return out;
}

} // namespace

std::string pythonStrip(std::string_view text, const std::string *chars, bool left, bool right) {
  std::vector<uint32_t> set;
  if (chars)
    for (std::size_t pos = 0; pos < chars->size();)
      set.push_back(nextCodePoint(*chars, pos));
  auto strips = [&](uint32_t cp) {
    return chars ? std::find(set.begin(), set.end(), cp) != set.end() : isPythonSpace(cp);
  };
  std::vector<CodePoint> cps = decodeAll(text);
  std::size_t first = 0, last = cps.size();
  if (left)
    while (first < last && strips(cps[first].cp))
      ++first;
  if (right)
    while (last > first && strips(cps[last - 1].cp))
      --last;
  if (first == last)
    return {};
  return std::string(text.substr(cps[first].begin, cps[last - 1].end - cps[first].begin));
}

std::vector<std::string> pythonSplit(std::string_view text, const std::string *sep, long long maxSplit,
                                     bool fromRight) {
  std::vector<std::string> parts;
  if (sep) {
    // Separator split: consecutive separators delimit empty strings.
    if (!fromRight) {
      std::size_t pos = 0;
      while (maxSplit < 0 || (long long)parts.size() < maxSplit) {
        std::size_t hit = text.find(*sep, pos);
        if (hit == std::string_view::npos)
          break;
        parts.emplace_back(text.substr(pos, hit - pos));
        pos = hit + sep->size();
      }
      parts.emplace_back(text.substr(pos));
      return parts;
    }
    std::size_t end = text.size();
    std::vector<std::string> reversed;
    while (maxSplit < 0 || (long long)reversed.size() < maxSplit) {
      if (end < sep->size())
        break;
      std::size_t hit = text.rfind(*sep, end - sep->size());
      if (hit == std::string_view::npos)
        break;
      reversed.emplace_back(text.substr(hit + sep->size(), end - hit - sep->size()));
      end = hit;
    }
    reversed.emplace_back(text.substr(0, end));
    return {reversed.rbegin(), reversed.rend()};
  }
  // Whitespace split: runs of whitespace separate, none at the ends.
  std::vector<CodePoint> cps = decodeAll(text);
  if (!fromRight) {
    std::size_t i = 0;
    while (i < cps.size()) {
      while (i < cps.size() && isPythonSpace(cps[i].cp))
        ++i;
      if (i == cps.size())
        break;
      if (maxSplit >= 0 && (long long)parts.size() == maxSplit) {
        parts.emplace_back(text.substr(cps[i].begin));
        break;
      }
      std::size_t start = i;
      while (i < cps.size() && !isPythonSpace(cps[i].cp))
        ++i;
      parts.emplace_back(text.substr(cps[start].begin, cps[i - 1].end - cps[start].begin));
    }
    return parts;
  }
  std::vector<std::string> reversed;
  std::size_t i = cps.size();
  while (i > 0) {
    while (i > 0 && isPythonSpace(cps[i - 1].cp))
      --i;
    if (i == 0)
      break;
    if (maxSplit >= 0 && (long long)reversed.size() == maxSplit) {
      reversed.emplace_back(text.substr(0, cps[i - 1].end));
      break;
    }
    std::size_t end = i;
    while (i > 0 && !isPythonSpace(cps[i - 1].cp))
      --i;
    reversed.emplace_back(text.substr(cps[i].begin, cps[end - 1].end - cps[i].begin));
  }
  return {reversed.rbegin(), reversed.rend()};
}

std::vector<std::string> pythonSplitLines(std::string_view text, bool keepEnds) {
  std::vector<std::string> lines;
  std::vector<CodePoint> cps = decodeAll(text);
  std::size_t lineStart = 0; // byte offset
  for (std::size_t i = 0; i < cps.size(); ++i) {
    uint32_t cp = cps[i].cp;
    bool boundary = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || (cp >= 0x1C && cp <= 0x1E) ||
                    cp == 0x85 || cp == 0x2028 || cp == 0x2029;
    if (!boundary)
      continue;
    std::size_t breakBegin = cps[i].begin, breakEnd = cps[i].end;
    if (cp == '\r' && i + 1 < cps.size() && cps[i + 1].cp == '\n')
      breakEnd = cps[++i].end;
    lines.emplace_back(text.substr(lineStart, (keepEnds ? breakEnd : breakBegin) - lineStart));
    lineStart = breakEnd;
  }
  if (lineStart < text.size())
    lines.emplace_back(text.substr(lineStart));
  return lines;
}

std::string pythonReplace(std::string_view text, std::string_view old, std::string_view replacement,
                          long long count) {
  std::string out;
  if (old.empty()) {
    // Python inserts `replacement` before every code point and at the end.
    long long done = 0;
    std::size_t pos = 0;
    while (pos < text.size()) {
      if (count < 0 || done < count) {
        out += replacement;
        ++done;
      }
      std::size_t start = pos;
      nextCodePoint(text, pos);
      out.append(text.substr(start, pos - start));
    }
    if (count < 0 || done < count)
      out += replacement;
    return out;
  }
  std::size_t pos = 0;
  long long done = 0;
  while (count < 0 || done < count) {
    std::size_t hit = text.find(old, pos);
    if (hit == std::string_view::npos)
      break;
    out.append(text.substr(pos, hit - pos));
    out += replacement;
    pos = hit + old.size();
    ++done;
  }
  out.append(text.substr(pos));
  return out;
}

namespace {

bool isAscii(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}
bool isLowerAscii(char c) { return c >= 'a' && c <= 'z'; }
bool isUpperAscii(char c) { return c >= 'A' && c <= 'Z'; }
char toUpperAscii(char c) { return isLowerAscii(c) ? char(c - 'a' + 'A') : c; }
char toLowerAscii(char c) { return isUpperAscii(c) ? char(c - 'A' + 'a') : c; }

} // namespace

std::optional<std::string> asciiCase(std::string_view text, CaseMapping mapping) {
  if (!isAscii(text))
    return std::nullopt;
  std::string out(text);
  switch (mapping) {
  case CaseMapping::Upper:
    for (char &c : out)
      c = toUpperAscii(c);
    break;
  case CaseMapping::Lower:
    for (char &c : out)
      c = toLowerAscii(c);
    break;
  case CaseMapping::Capitalize:
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = i == 0 ? toUpperAscii(out[i]) : toLowerAscii(out[i]);
    break;
  case CaseMapping::Title: {
    // str.title(): a letter after a letter is lowered, any other raised.
    bool previousCased = false;
    for (char &c : out) {
      bool cased = isLowerAscii(c) || isUpperAscii(c);
      if (cased)
        c = previousCased ? toLowerAscii(c) : toUpperAscii(c);
      previousCased = cased;
    }
    break;
  }
  case CaseMapping::JinjaTitle: {
    // Jinja2's `title` filter: words start after runs of -, whitespace, (,
    // {, [ or <; each word's first character raised, the rest lowered.
    bool wordStart = true;
    for (char &c : out) {
      bool separator = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' ||
                       isPythonSpace(static_cast<unsigned char>(c));
      if (separator) {
        wordStart = true;
        continue;
      }
      c = wordStart ? toUpperAscii(c) : toLowerAscii(c);
      wordStart = false;
    }
    break;
  }
  }
  return out;
}

std::optional<bool> asciiIsLower(std::string_view text) {
  if (!isAscii(text))
    return std::nullopt;
  bool cased = false;
  for (char c : text) {
    if (isUpperAscii(c))
      return false;
    cased |= isLowerAscii(c);
  }
  return cased;
}

std::optional<bool> asciiIsUpper(std::string_view text) {
  if (!isAscii(text))
    return std::nullopt;
  bool cased = false;
  for (char c : text) {
    if (isLowerAscii(c))
      return false;
    cased |= isUpperAscii(c);
  }
  return cased;
}

std::vector<std::size_t> sliceIndices(std::size_t length, std::optional<long long> start,
                                      std::optional<long long> stop, long long step) {
  long long n = static_cast<long long>(length);
  // A step beyond the length picks at most the first item: clamping it
  // keeps the index arithmetic far from overflow.
  if (step > n)
    step = n + 1;
  if (step < -n - 1)
    step = -n - 1;
  auto adjust = [&](std::optional<long long> index, long long fallback) {
    if (!index)
      return fallback;
    long long i = *index;
    if (i < 0) {
      i += n;
      if (i < 0)
        i = step < 0 ? -1 : 0;
    } else if (i >= n) {
      i = step < 0 ? n - 1 : n;
    }
    return i;
  };
  long long first = adjust(start, step < 0 ? n - 1 : 0);
  long long end = adjust(stop, step < 0 ? -1 : n);
  std::vector<std::size_t> out;
  for (long long i = first; step > 0 ? i < end : i > end; i += step)
    out.push_back(static_cast<std::size_t>(i));
  return out;
}

} // namespace tfmc::runtime::jinja
