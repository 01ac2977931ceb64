// svc companion firmware: answers the hub's commands (DESIGN "The board line protocol").
// `{"id":N,"cmd":"…","args":{…}}` → `{"id":N,"ok":true,"result":…}` or `{"id":N,"ok":false,"error":"…"}`.
// Uses the Arduino GPIO API (pinMode, digitalRead, digitalWrite), which the host test shims.
#ifndef SVC_COMMANDS_H
#define SVC_COMMANDS_H

#include "svc_line.h"

#ifndef SVC_FW
#define SVC_FW "svc-companion/0.1.0"
#endif
#ifndef SVC_MAX_PIN
#define SVC_MAX_PIN 69
#endif
#define SVC_STR2(x) #x
#define SVC_STR(x) SVC_STR2(x)

struct SvcCommandStats {
  uint32_t answered;
  uint32_t rejected;  // lines with no usable id: nothing can be answered
};

// Reads args.<key> as an integer within [lo, hi].
inline bool svc_arg_int(const char* line, size_t len, const char* key, int64_t lo, int64_t hi, int64_t* out) {
  SvcJson args;
  if (!svc_json_find(line, line + len, "args", &args)) return false;
  SvcJson v;
  if (!svc_json_find(args.p, args.end, key, &v)) return false;
  return svc_json_int(v, out) && *out >= lo && *out <= hi;
}

// Handles one complete line from the hub. Writes exactly one reply line when the id is readable.
template <class OUT>
void svc_handle_command(OUT& out, const char* line, size_t len, size_t lineCap, SvcCommandStats& stats) {
  SvcJson at;
  int64_t id;
  if (!svc_json_find(line, line + len, "id", &at) || !svc_json_int(at, &id) || id < 0) {
    stats.rejected++;
    return;
  }
  uint32_t uid = (uint32_t)id;
  char cmd[24];
  if (!svc_json_find(line, line + len, "cmd", &at) || !svc_json_string(at, cmd, sizeof cmd)) {
    stats.answered++;
    svc_reply_error(out, uid, "cmd: missing or not a string");
    return;
  }
  stats.answered++;
  if (strcmp(cmd, "ping") == 0) {
    svc_reply_ok_begin(out, uid);
    svc_puts(out, "\"pong\"");
    svc_reply_end(out);
  } else if (strcmp(cmd, "capabilities") == 0) {
    svc_reply_ok_begin(out, uid);
    svc_puts(out, "{\"fw\":");
    svc_put_json_string(out, SVC_FW);
    svc_puts(out, ",\"commands\":[\"ping\",\"gpio_read\",\"gpio_write\",\"capabilities\"],\"line_cap\":");
    svc_put_uint(out, (uint32_t)lineCap);
    svc_puts(out, ",\"pins\":");
    svc_put_uint(out, SVC_MAX_PIN + 1);
    svc_puts(out, "}");
    svc_reply_end(out);
  } else if (strcmp(cmd, "gpio_read") == 0 || strcmp(cmd, "gpio_write") == 0) {
    bool write = cmd[5] == 'w';
    int64_t pin, value = 0;
    if (!svc_arg_int(line, len, "pin", 0, SVC_MAX_PIN, &pin)) {
      svc_reply_error(out, uid, "args.pin: must be an integer from 0 to " SVC_STR(SVC_MAX_PIN));
      return;
    }
    if (write && !svc_arg_int(line, len, "value", 0, 1, &value)) {
      svc_reply_error(out, uid, "args.value: must be 0 or 1");
      return;
    }
    if (write) {
      pinMode((uint8_t)pin, OUTPUT);
      digitalWrite((uint8_t)pin, value ? HIGH : LOW);
    } else {
      value = digitalRead((uint8_t)pin) == HIGH ? 1 : 0;
    }
    svc_reply_ok_begin(out, uid);
    svc_puts(out, "{\"pin\":");
    svc_put_uint(out, (uint32_t)pin);
    svc_puts(out, ",\"value\":");
    svc_put_uint(out, (uint32_t)value);
    svc_puts(out, "}");
    svc_reply_end(out);
  } else {
    svc_reply_error(out, uid, "cmd: unknown command");
  }
}

#endif
