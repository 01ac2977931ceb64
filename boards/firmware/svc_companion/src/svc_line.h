// svc board line protocol, board side: framing and encoding (DESIGN "The board line protocol").
// Newline-terminated JSON objects. Framing rules, shared with bridge/codec/framer.ts:
//  - a trailing '\r' is stripped (println framing);
//  - blank lines are skipped and not counted;
//  - a line longer than the buffer is dropped whole and counted, never partly kept.
// No Arduino headers, no heap: it compiles on the host for boards/firmware/host/host_test.cpp.
// Every literal is in flash (svc_pgm.h).
#ifndef SVC_LINE_H
#define SVC_LINE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "svc_identity.h"
#include "svc_pgm.h"

// ---------------------------------------------------------------------------------------------
// Reading: a fixed buffer that yields whole lines.

template <size_t CAP>
class SvcLineReader {
 public:
  SvcLineReader() : used_(0), discarding_(false), oversized_(0), lines_(0) {}

  // Feeds one byte. Returns true when a complete line sits in line() (NUL-terminated, length()).
  bool feed(uint8_t b) {
    if (b == '\n') {
      if (discarding_) {
        discarding_ = false;
        oversized_++;
        used_ = 0;
        return false;
      }
      size_t end = used_;
      if (end > 0 && buf_[end - 1] == '\r') end--;
      used_ = 0;
      if (end > CAP) {  // only possible as CAP+1 bytes without '\r'
        oversized_++;
        return false;
      }
      if (end == 0) return false;
      buf_[end] = 0;
      len_ = end;
      lines_++;
      return true;
    }
    if (discarding_) return false;
    // One byte of slack for the '\r' of a "\r\n" line exactly at the cap.
    if (used_ >= CAP + 1) {
      discarding_ = true;
      used_ = 0;
      return false;
    }
    buf_[used_++] = (char)b;
    return false;
  }

  const char* line() const { return buf_; }
  size_t length() const { return len_; }
  uint32_t oversized() const { return oversized_; }
  uint32_t lines() const { return lines_; }

 private:
  char buf_[CAP + 2];
  size_t used_;
  size_t len_ = 0;
  bool discarding_;
  uint32_t oversized_;
  uint32_t lines_;
};

// ---------------------------------------------------------------------------------------------
// Writing. OUT is anything with `size_t write(uint8_t)`: Arduino's Print (Serial), the companion's
// pumping writer (svc_companion.h) or a host buffer. Names ending in _P take strings in flash
// (svc_pgm.h); the others take strings in RAM, for text the sketch makes at run time.

template <class OUT>
void svc_puts(OUT& out, const char* s) {
  while (*s) out.write((uint8_t)*s++);
}

template <class OUT>
void svc_puts_P(OUT& out, SvcFlashStr s) {
  for (uint8_t c; (c = svc_pgm_byte(s)) != 0; s++) out.write(c);
}

template <class OUT>
void svc_put_uint(OUT& out, uint32_t v) {
  char tmp[11];
  int n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  while (n) out.write((uint8_t)tmp[--n]);
}

template <class OUT>
void svc_put_int(OUT& out, int32_t v) {
  if (v < 0) {
    out.write('-');
    svc_put_uint(out, (uint32_t)(-(int64_t)v));
  } else {
    svc_put_uint(out, (uint32_t)v);
  }
}

// One byte of a JSON string literal, escaped exactly as JavaScript's JSON.stringify does for the
// same bytes: '"' and '\\' escaped, \b \f \n \r \t by name, other control bytes as \u00xx
// (lowercase hex), everything else (UTF-8 included) passed through.
template <class OUT>
void svc_put_json_char(OUT& out, uint8_t c) {
  char named = 0;
  switch (c) {
    case '"': named = '"'; break;
    case '\\': named = '\\'; break;
    case '\b': named = 'b'; break;
    case '\f': named = 'f'; break;
    case '\n': named = 'n'; break;
    case '\r': named = 'r'; break;
    case '\t': named = 't'; break;
  }
  if (named) {
    out.write('\\');
    out.write((uint8_t)named);
  } else if (c < 0x20) {
    svc_puts_P(out, SVC_P("\\u00"));
    uint8_t lo = c & 15;
    out.write((uint8_t)('0' + (c >> 4)));
    out.write((uint8_t)(lo < 10 ? '0' + lo : 'a' + lo - 10));
  } else {
    out.write(c);
  }
}

template <class OUT>
void svc_put_json_string(OUT& out, const char* s) {
  out.write('"');
  for (; *s; s++) svc_put_json_char(out, (uint8_t)*s);
  out.write('"');
}

template <class OUT>
void svc_put_json_string_P(OUT& out, SvcFlashStr s) {
  out.write('"');
  for (uint8_t c; (c = svc_pgm_byte(s)) != 0; s++) svc_put_json_char(out, c);
  out.write('"');
}

// `{"event":"hello","board":…,"fw":"<name>/<version>","proto":<n>}`: the board's name in flash,
// the rest from the firmware's identity (svc_identity.h).
template <class OUT>
void svc_emit_hello_P(OUT& out, SvcFlashStr board) {
  svc_puts_P(out, SVC_P("{\"event\":\"hello\",\"board\":"));
  svc_put_json_string_P(out, board);
  svc_puts_P(out, SVC_P(",\"fw\":"));
  SvcFlashStr proto = svc_put_fw_json(out);
  svc_puts_P(out, SVC_P(",\"proto\":"));
  svc_puts_P(out, proto);
  svc_puts_P(out, SVC_P("}\n"));
}

template <class OUT>
void svc_emit_message_begin_P(OUT& out, SvcFlashStr signal) {
  svc_puts_P(out, SVC_P("{\"event\":\"message\",\"signal\":"));
  svc_put_json_string_P(out, signal);
  svc_puts_P(out, SVC_P(",\"text\":"));
}

// A `message` event whose text is made at run time (a reading, a count).
template <class OUT>
void svc_emit_message(OUT& out, SvcFlashStr signal, const char* text) {
  svc_emit_message_begin_P(out, signal);
  svc_put_json_string(out, text);
  svc_puts_P(out, SVC_P("}\n"));
}

// A `message` event whose text is fixed (in flash).
template <class OUT>
void svc_emit_message_P(OUT& out, SvcFlashStr signal, SvcFlashStr text) {
  svc_emit_message_begin_P(out, signal);
  svc_put_json_string_P(out, text);
  svc_puts_P(out, SVC_P("}\n"));
}

// `{"id":N,"ok":true,"result":` — the caller writes the result JSON, then svc_reply_end.
template <class OUT>
void svc_reply_ok_begin(OUT& out, uint32_t id) {
  svc_puts_P(out, SVC_P("{\"id\":"));
  svc_put_uint(out, id);
  svc_puts_P(out, SVC_P(",\"ok\":true,\"result\":"));
}

template <class OUT>
void svc_reply_end(OUT& out) {
  svc_puts_P(out, SVC_P("}\n"));
}

// `{"id":N,"ok":false,"error":"` — the caller writes the message (no quotes or escapes in it), then
// svc_reply_error_end.
template <class OUT>
void svc_reply_error_begin(OUT& out, uint32_t id) {
  svc_puts_P(out, SVC_P("{\"id\":"));
  svc_put_uint(out, id);
  svc_puts_P(out, SVC_P(",\"ok\":false,\"error\":\""));
}

template <class OUT>
void svc_reply_error_end(OUT& out) {
  svc_puts_P(out, SVC_P("\"}\n"));
}

// ---------------------------------------------------------------------------------------------
// A small JSON scanner for commands `{"id":N,"cmd":"name","args":{...}}`: just enough to find
// top-level keys and read integers and short strings, without a heap.

struct SvcJson {
  const char* p;
  const char* end;
};

inline void svc_json_ws(SvcJson& j) {
  while (j.p < j.end && (*j.p == ' ' || *j.p == '\t' || *j.p == '\r' || *j.p == '\n')) j.p++;
}

// Reads a string into dst (truncated to dstLen-1; an escape keeps the escaped character, so
// \" and \\ read right and \uXXXX does not: command names and keys never need it).
inline bool svc_json_string(SvcJson& j, char* dst, size_t dstLen) {
  if (j.p >= j.end || *j.p != '"') return false;
  j.p++;
  size_t n = 0;
  while (j.p < j.end && *j.p != '"') {
    char c = *j.p++;
    if (c == '\\') {
      if (j.p >= j.end) return false;
      c = *j.p++;
    }
    if (dst && n + 1 < dstLen) dst[n++] = c;
  }
  if (j.p >= j.end) return false;
  j.p++;
  if (dst && dstLen) dst[n] = 0;
  return true;
}

// Skips any JSON value (nesting by bracket depth, strings aware).
inline bool svc_json_skip(SvcJson& j) {
  svc_json_ws(j);
  if (j.p >= j.end) return false;
  if (*j.p == '"') return svc_json_string(j, 0, 0);
  if (*j.p == '{' || *j.p == '[') {
    int depth = 0;
    while (j.p < j.end) {
      char c = *j.p;
      if (c == '"') {
        if (!svc_json_string(j, 0, 0)) return false;
        continue;
      }
      if (c == '{' || c == '[') depth++;
      if (c == '}' || c == ']') {
        depth--;
        if (depth == 0) {
          j.p++;
          return true;
        }
      }
      j.p++;
    }
    return false;
  }
  const char* start = j.p;
  while (j.p < j.end && *j.p != ',' && *j.p != '}' && *j.p != ']' && *j.p != ' ') j.p++;
  return j.p > start;
}

inline bool svc_json_int(SvcJson& j, int64_t* out) {
  svc_json_ws(j);
  bool neg = false;
  if (j.p < j.end && *j.p == '-') {
    neg = true;
    j.p++;
  }
  if (j.p >= j.end || *j.p < '0' || *j.p > '9') return false;
  int64_t v = 0;
  while (j.p < j.end && *j.p >= '0' && *j.p <= '9') {
    v = v * 10 + (*j.p++ - '0');
    if (v > 0xffffffffLL) return false;
  }
  // A fraction or exponent is not an integer.
  if (j.p < j.end && (*j.p == '.' || *j.p == 'e' || *j.p == 'E')) return false;
  *out = neg ? -v : v;
  return true;
}

// Positions j at the value of top-level `key` (in flash) in the object [p, end). False when absent
// or malformed.
inline bool svc_json_find(const char* p, const char* end, SvcFlashStr key, SvcJson* at) {
  SvcJson j = {p, end};
  svc_json_ws(j);
  if (j.p >= j.end || *j.p != '{') return false;
  j.p++;
  char name[24];
  for (;;) {
    svc_json_ws(j);
    if (j.p < j.end && *j.p == '}') return false;
    if (!svc_json_string(j, name, sizeof name)) return false;
    svc_json_ws(j);
    if (j.p >= j.end || *j.p != ':') return false;
    j.p++;
    svc_json_ws(j);
    if (svc_strcmp_P(name, key) == 0) {
      *at = j;
      return true;
    }
    if (!svc_json_skip(j)) return false;
    svc_json_ws(j);
    if (j.p < j.end && *j.p == ',') {
      j.p++;
      continue;
    }
    return false;
  }
}

#endif
