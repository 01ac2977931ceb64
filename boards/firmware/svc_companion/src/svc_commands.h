// svc companion firmware: the hub's commands (DESIGN "The board line protocol").
// `{"id":N,"cmd":"…","args":{…}}` → `{"id":N,"ok":true,"result":…}` or `{"id":N,"ok":false,"error":"…"}`.
// A command is parsed into a small SvcCommand as soon as its line is complete, and answered later:
// the line buffer is then free for the next command while the answer is written (svc_companion.h).
// Pins are checked against the board's own core definitions (NUM_DIGITAL_PINS, digitalPinToPort,
// NUM_ANALOG_INPUTS), because the core's pin tables have exactly that many entries and a pin past
// them makes digitalRead/digitalWrite use whatever bytes follow as a register address.
#ifndef SVC_COMMANDS_H
#define SVC_COMMANDS_H

#include "svc_line.h"

#if !defined(NUM_DIGITAL_PINS) || !defined(NOT_A_PIN) || !defined(NUM_ANALOG_INPUTS)
#error "svc_commands.h needs the board core's NUM_DIGITAL_PINS, NUM_ANALOG_INPUTS and NOT_A_PIN (include Arduino.h first)"
#endif

// analog_read takes an analog input's number (0 for A0); the core maps it to the pin analogRead
// wants. Cores without the mapping take the input's number directly.
#ifdef analogInputToDigitalPin
#define SVC_ANALOG_PIN(ch) analogInputToDigitalPin(ch)
#else
#define SVC_ANALOG_PIN(ch) (ch)
#endif

struct SvcCommandStats {
  uint32_t answered;
  uint32_t rejected;  // lines with no usable id: nothing can be answered
};

enum SvcCommandKind : uint8_t {
  SVC_CMD_PING,
  SVC_CMD_CAPABILITIES,
  SVC_CMD_GPIO_READ,
  SVC_CMD_GPIO_WRITE,
  SVC_CMD_ANALOG_READ,
  SVC_CMD_ERROR,  // answered with `error`
};

enum SvcCommandError : uint8_t {
  SVC_ERR_NONE,
  SVC_ERR_CMD,            // cmd: missing or not a string
  SVC_ERR_UNKNOWN,        // cmd: unknown command
  SVC_ERR_PIN_RANGE,      // args.pin outside 0..NUM_DIGITAL_PINS-1, or not an integer
  SVC_ERR_PIN_NONE,       // a number inside the range that names no pin on this board
  SVC_ERR_PIN_RESERVED,   // a pin the firmware itself drives or reads (serial, the coin input)
  SVC_ERR_VALUE,          // args.value: not 0 or 1
  SVC_ERR_ANALOG_RANGE,   // args.pin outside 0..NUM_ANALOG_INPUTS-1, or not an integer
};

// 8 bytes: the whole of a parsed command, so a handful can wait while a reply is written.
struct SvcCommand {
  uint32_t id;
  uint8_t kind;
  uint8_t error;
  uint8_t pin;
  uint8_t value;
};

// Pins the sketch keeps for itself; gpio_write refuses them (reading them is harmless).
class SvcPinSet {
 public:
  SvcPinSet() { memset(bits_, 0, sizeof bits_); }
  void add(uint8_t pin) {
    if (pin < NUM_DIGITAL_PINS) bits_[pin >> 3] |= (uint8_t)(1 << (pin & 7));
  }
  bool has(uint8_t pin) const { return pin < NUM_DIGITAL_PINS && (bits_[pin >> 3] & (1 << (pin & 7))); }

 private:
  uint8_t bits_[(NUM_DIGITAL_PINS + 7) / 8];
};

// Reads args.<key> (a key in flash) as an integer within [lo, hi].
inline bool svc_arg_int(const char* line, size_t len, SvcFlashStr key, int64_t lo, int64_t hi, int64_t* out) {
  SvcJson args;
  if (!svc_json_find(line, line + len, SVC_P("args"), &args)) return false;
  SvcJson v;
  if (!svc_json_find(args.p, args.end, key, &v)) return false;
  return svc_json_int(v, out) && *out >= lo && *out <= hi;
}

// Parses one complete line. False when it has no usable id (nothing can be answered); otherwise
// `cmd` holds either a command to run or the error to answer with.
inline bool svc_parse_command(const char* line, size_t len, const SvcPinSet& reserved, SvcCommand* cmd) {
  SvcJson at;
  int64_t id;
  if (!svc_json_find(line, line + len, SVC_P("id"), &at) || !svc_json_int(at, &id) || id < 0) return false;
  cmd->id = (uint32_t)id;
  cmd->kind = SVC_CMD_ERROR;
  cmd->error = SVC_ERR_NONE;
  cmd->pin = 0;
  cmd->value = 0;
  char name[24];
  if (!svc_json_find(line, line + len, SVC_P("cmd"), &at) || !svc_json_string(at, name, sizeof name)) {
    cmd->error = SVC_ERR_CMD;
    return true;
  }
  if (svc_strcmp_P(name, SVC_P("ping")) == 0) {
    cmd->kind = SVC_CMD_PING;
  } else if (svc_strcmp_P(name, SVC_P("capabilities")) == 0) {
    cmd->kind = SVC_CMD_CAPABILITIES;
  } else if (svc_strcmp_P(name, SVC_P("gpio_read")) == 0 || svc_strcmp_P(name, SVC_P("gpio_write")) == 0) {
    bool write = name[5] == 'w';
    int64_t pin, value = 0;
    if (!svc_arg_int(line, len, SVC_P("pin"), 0, NUM_DIGITAL_PINS - 1, &pin)) {
      cmd->error = SVC_ERR_PIN_RANGE;
    } else if (digitalPinToPort((uint8_t)pin) == NOT_A_PIN) {
      cmd->error = SVC_ERR_PIN_NONE;
    } else if (write && reserved.has((uint8_t)pin)) {
      cmd->error = SVC_ERR_PIN_RESERVED;
    } else if (write && !svc_arg_int(line, len, SVC_P("value"), 0, 1, &value)) {
      cmd->error = SVC_ERR_VALUE;
    } else {
      cmd->kind = write ? SVC_CMD_GPIO_WRITE : SVC_CMD_GPIO_READ;
      cmd->pin = (uint8_t)pin;
      cmd->value = (uint8_t)value;
    }
  } else if (svc_strcmp_P(name, SVC_P("analog_read")) == 0) {
    int64_t input;
    int mapped = -1;  // some cores' maps answer -1 for an input they have no pin for
    if (svc_arg_int(line, len, SVC_P("pin"), 0, NUM_ANALOG_INPUTS - 1, &input))
      mapped = (int)SVC_ANALOG_PIN((uint8_t)input);
    if (mapped < 0) {
      cmd->error = SVC_ERR_ANALOG_RANGE;
    } else {
      cmd->kind = SVC_CMD_ANALOG_READ;
      cmd->pin = (uint8_t)input;
    }
  } else {
    cmd->error = SVC_ERR_UNKNOWN;
  }
  return true;
}

template <class OUT>
void svc_put_error_text(OUT& out, uint8_t error) {
  switch (error) {
    case SVC_ERR_CMD: svc_puts_P(out, SVC_P("cmd: missing or not a string")); break;
    case SVC_ERR_UNKNOWN: svc_puts_P(out, SVC_P("cmd: unknown command")); break;
    case SVC_ERR_PIN_RANGE:
      svc_puts_P(out, SVC_P("args.pin: must be an integer from 0 to "));
      svc_put_uint(out, NUM_DIGITAL_PINS - 1);
      break;
    case SVC_ERR_PIN_NONE: svc_puts_P(out, SVC_P("args.pin: no such pin on this board")); break;
    case SVC_ERR_PIN_RESERVED: svc_puts_P(out, SVC_P("args.pin: used by the firmware itself")); break;
    case SVC_ERR_VALUE: svc_puts_P(out, SVC_P("args.value: must be 0 or 1")); break;
    default:
      svc_puts_P(out, SVC_P("args.pin: must be an analog input from 0 to "));
      svc_put_uint(out, NUM_ANALOG_INPUTS - 1);
      break;
  }
}

// Runs one parsed command and writes its one reply line.
template <class OUT>
void svc_answer_command(OUT& out, const SvcCommand& cmd, size_t lineCap) {
  switch (cmd.kind) {
    case SVC_CMD_PING:
      svc_reply_ok_begin(out, cmd.id);
      svc_puts_P(out, SVC_P("\"pong\""));
      svc_reply_end(out);
      return;
    case SVC_CMD_CAPABILITIES:
      svc_reply_ok_begin(out, cmd.id);
      svc_puts_P(out, SVC_P("{\"fw\":"));
      svc_put_fw_json(out);
      svc_puts_P(out, SVC_P(",\"commands\":[\"ping\",\"gpio_read\",\"gpio_write\",\"analog_read\",\"capabilities\"],\"line_cap\":"));
      svc_put_uint(out, (uint32_t)lineCap);
      svc_puts_P(out, SVC_P(",\"pins\":"));
      svc_put_uint(out, NUM_DIGITAL_PINS);
      svc_puts_P(out, SVC_P(",\"analog\":"));
      svc_put_uint(out, NUM_ANALOG_INPUTS);
      svc_puts_P(out, SVC_P("}"));
      svc_reply_end(out);
      return;
    case SVC_CMD_GPIO_READ:
    case SVC_CMD_GPIO_WRITE: {
      uint8_t value = cmd.value;
      if (cmd.kind == SVC_CMD_GPIO_WRITE) {
        pinMode(cmd.pin, OUTPUT);
        digitalWrite(cmd.pin, value ? HIGH : LOW);
      } else {
        value = digitalRead(cmd.pin) == HIGH ? 1 : 0;
      }
      svc_reply_ok_begin(out, cmd.id);
      svc_puts_P(out, SVC_P("{\"pin\":"));
      svc_put_uint(out, cmd.pin);
      svc_puts_P(out, SVC_P(",\"value\":"));
      svc_put_uint(out, value);
      svc_puts_P(out, SVC_P("}"));
      svc_reply_end(out);
      return;
    }
    case SVC_CMD_ANALOG_READ: {
      uint16_t value = (uint16_t)analogRead(SVC_ANALOG_PIN(cmd.pin));
      svc_reply_ok_begin(out, cmd.id);
      svc_puts_P(out, SVC_P("{\"pin\":"));
      svc_put_uint(out, cmd.pin);
      svc_puts_P(out, SVC_P(",\"value\":"));
      svc_put_uint(out, value);
      svc_puts_P(out, SVC_P("}"));
      svc_reply_end(out);
      return;
    }
    default:
      svc_reply_error_begin(out, cmd.id);
      svc_put_error_text(out, cmd.error);
      svc_reply_error_end(out);
  }
}

// Parses and answers one line at once (the host test's direct path; the sketch goes through
// SvcCompanion, which queues). Writes exactly one reply line when the id is readable.
template <class OUT>
void svc_handle_command(OUT& out, const char* line, size_t len, size_t lineCap, SvcCommandStats& stats) {
  static const SvcPinSet none;
  SvcCommand cmd;
  if (!svc_parse_command(line, len, none, &cmd)) {
    stats.rejected++;
    return;
  }
  stats.answered++;
  svc_answer_command(out, cmd, lineCap);
}

#endif
