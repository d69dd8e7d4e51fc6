// The JSON form of a Schedule (schema in python/collkit/io.py and docs/schedule-formats.md):
// one object, per-op fields as parallel arrays (columns), one key per line.
//
// The writer streams: it reads the ranks from a RankSource once per column and hands the text
// to a Sink in pieces of about a megabyte, so its memory is one rank's program whatever P (a
// generator is asked for each rank about 15 times; a Schedule's views cost nothing). The
// columns `cpu` and `nic` are written only when some op sets them.
#pragma once
#include <string>

#include "collkit/schedule.hpp"
#include "collkit/text.hpp"

namespace collkit {

std::string to_json(const Schedule& s);
void write_json(const ScheduleHeader& h, const RankSource& rank, const Sink& sink);
// A JSON string literal as Python's json.dumps writes it (ASCII only: \uXXXX beyond).
std::string json_quote(std::string_view utf8);

}  // namespace collkit
