// The firmware's identity: its name, its version and the line protocol it speaks, kept once in
// flash as `svc-fw:<name>/<version>;proto=<n>` (NUL-terminated). The hello and the capabilities
// reply print from that one string, so the linker keeps it even with LTO and --gc-sections (they
// drop what nothing reads), and the hub can tell which firmware an image holds by scanning its
// bytes before writing it to a board (bridge/flash/identity.ts reads the same format).
//
// A build stamps another version with -DSVC_FW_VERSION='"0.1.9"' (or another name with
// SVC_FW_NAME). Both are checked at compile time: 1 to 31 of A-Z a-z 0-9 . _ + - each, so the
// marker stays unambiguous and the hello needs no escaping.
#ifndef SVC_IDENTITY_H
#define SVC_IDENTITY_H

#include "svc_pgm.h"

#ifndef SVC_FW_NAME
#define SVC_FW_NAME "svc-companion"
#endif
#ifndef SVC_FW_VERSION
#define SVC_FW_VERSION "0.2.0"  // library.properties' version (test/boards/firmware.test.ts checks)
#endif
// The line protocol's version (bridge/README.md, "The board line protocol"). Only a test sets
// another, to play a board that speaks one the hub does not.
#ifndef SVC_PROTO
#define SVC_PROTO 1
#endif
#ifdef SVC_FW
#error "SVC_FW is made from SVC_FW_NAME and SVC_FW_VERSION: set those instead"
#endif
#define SVC_FW SVC_FW_NAME "/" SVC_FW_VERSION

#define SVC_STR_(x) #x
#define SVC_STR(x) SVC_STR_(x)
#define SVC_ID_PREFIX "svc-fw:"
#define SVC_ID_PROTO ";proto="

constexpr bool svc_id_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '+' || c == '-';
}
constexpr bool svc_id_text(const char* s, unsigned n) {
  return *s == 0 ? n >= 1 && n <= 31 : svc_id_char(*s) && svc_id_text(s + 1, n + 1);
}
constexpr bool svc_id_digits(const char* s, unsigned n) {
  return *s == 0 ? n <= 3 : *s >= '0' && *s <= '9' && svc_id_digits(s + 1, n + 1);
}
// Decimal, no leading zero: the hello prints these digits as a JSON number (where 01 is not one),
// and C would read 010 as octal.
constexpr bool svc_id_proto(const char* s) { return *s >= '1' && *s <= '9' && svc_id_digits(s + 1, 1); }
static_assert(svc_id_text(SVC_FW_NAME, 0), "SVC_FW_NAME: 1 to 31 of A-Z a-z 0-9 . _ + -");
static_assert(svc_id_text(SVC_FW_VERSION, 0), "SVC_FW_VERSION: 1 to 31 of A-Z a-z 0-9 . _ + -, e.g. \"0.2.0\"");
static_assert(svc_id_proto(SVC_STR(SVC_PROTO)) && SVC_PROTO >= 1 && SVC_PROTO <= 255,
              "SVC_PROTO: a decimal integer from 1 to 255");

// The marker itself. A function-local static of an inline function: one copy in the image however
// many files include this header.
inline SvcFlashStr svc_identity() {
  static const char id[] SVC_PROGMEM = SVC_ID_PREFIX SVC_FW SVC_ID_PROTO SVC_STR(SVC_PROTO);
  return id;
}

// Writes `"<name>/<version>"` (a JSON string: its characters need no escaping) and returns where
// the protocol's digits start in the marker.
template <class OUT>
SvcFlashStr svc_put_fw_json(OUT& out) {
  SvcFlashStr p = svc_identity() + (sizeof SVC_ID_PREFIX - 1);
  out.write('"');
  for (uint8_t c; (c = svc_pgm_byte(p)) != ';'; p++) out.write(c);
  out.write('"');
  return p + (sizeof SVC_ID_PROTO - 1);
}

#endif
