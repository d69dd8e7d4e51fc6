// The JSON form of a Schedule (schema in python/collkit/io.py and docs/schedule-formats.md):
// one object, per-op fields as parallel arrays (columns), one key per line.
//
// The writer streams: it reads the ranks from a RankSource once per column and hands the text
// to a Sink in pieces of about a megabyte, so its memory is one rank's program whatever P (a
// generator is asked for each rank about 15 times; a Schedule's views cost nothing). The
// columns `cpu` and `nic` are written only when some op sets them.
#pragma once
#include <functional>
#include <string>

#include "collkit/schedule.hpp"
#include "collkit/text.hpp"

namespace collkit {

std::string to_json(const Schedule& s);
void write_json(const ScheduleHeader& h, const RankSource& rank, const Sink& sink);
// Reads a JSON schedule file as it goes: a first pass checks its shape and the header, a second
// reads all columns at once (a cursor each) and hands each rank's program to `on_rank` in
// order. Memory of one rank's program, whatever P. The same checks as the Python reader
// (collkit.io.from_json) and the text parser's field checks; Error(format) otherwise.
void read_json_file(const std::string& path,
                    const std::function<void(const ScheduleHeader&)>& on_header,
                    const std::function<void(const RankView&)>& on_rank);
// The same reader over text in memory (what collkit.io.from_json reads through: one reader of
// JSON schedules, this one).
void read_json_text(std::string_view text,
                    const std::function<void(const ScheduleHeader&)>& on_header,
                    const std::function<void(const RankView&)>& on_rank);
// A JSON string literal as Python's json.dumps writes it (ASCII only: \uXXXX beyond).
std::string json_quote(std::string_view utf8);

}  // namespace collkit
