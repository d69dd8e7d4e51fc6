// StreamLines, the line source of the text and GOAL readers: every line as the stream holds it
// (across blocks, longer than a block, "\r\n", a last line without its end, a stream read from
// the middle, lines taken through buffered() and skip()), each at an address congruent to its
// offset in the stream modulo 64, where the kernel's copy from the page cache costs a quarter of
// a misaligned one.
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../src/io/text_detail.hpp"
#include "check.hpp"

namespace {

bool aligned(const char* p, uint64_t offset) {
  return (reinterpret_cast<uintptr_t>(p) - offset) % 64 == 0;
}

}  // namespace

TEST(stream_lines_reads_every_line_in_place) {
  std::mt19937_64 rng(11);
  std::vector<std::string> lines;
  std::string text;
  for (int i = 0; i < 30000; ++i) {
    size_t len = rng() % 120;
    if (i % 9000 == 5) len = (size_t{1} << 20) + 4097 + static_cast<size_t>(i);  // past a block
    std::string l;
    for (size_t k = 0; k < len; ++k) l.push_back(static_cast<char>('a' + rng() % 26));
    lines.push_back(l);
    text += l;
    text += i % 7 == 3 ? "\r\n" : "\n";
  }
  text.pop_back();  // the last line without its end
  for (uint64_t start : {0, 1, 16, 63, 100}) {
    std::istringstream in(std::string(start, '#') + text);
    in.seekg(static_cast<std::streamoff>(start));
    collkit::io::StreamLines s(in);
    uint64_t offset = start;  // of the next line
    size_t i = 0;
    bool ok = true;
    std::string_view line;
    while (ok && i < lines.size()) {
      if (i % 3 == 2) {  // a reader taking whole lines from the block itself
        const std::string_view b = s.buffered(size_t{1} << 16);
        ok = ok && aligned(b.data(), offset);
        size_t bytes = 0;
        int64_t n = 0;
        while (i < lines.size() && n < 4) {
          const size_t nl = b.find('\n', bytes);
          if (nl == std::string_view::npos) break;
          ok = ok && b.substr(bytes, nl - bytes - (i % 7 == 3)) == lines[i];
          bytes = nl + 1, ++n, ++i;
        }
        s.skip(bytes, n);
        offset += bytes;
        if (n != 0) continue;  // else the line is not whole in the view: next() reads it
      }
      ok = ok && s.next(line) && line == lines[i] && aligned(line.data(), offset);
      offset += lines[i].size() + (i % 7 == 3 ? 2 : 1);
      ++i;
    }
    CHECK(ok);
    CHECK(i == lines.size());
    CHECK(!s.next(line));
    CHECK(s.number() == static_cast<int64_t>(lines.size()));
  }
}
