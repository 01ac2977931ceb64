// Host build of the companion library. test/boards/firmware.test.ts compiles this with g++
// (-I ../svc_companion/src -I .) and compares what it prints with the golden files in boards/golden/.
//   host_test events            the fixed event scenario                    → events.lines
//   host_test commands < FILE   answers each command line, parsed and run    → replies.lines
//   host_test link < FILE       the same bytes sent back to back through SvcCompanion over the
//                               modelled UART (64-byte rings): replies.lines + "# rx overflowed 0"
//   host_test board < FILE      link, on a board whose pin 7 is not a pin, with 0, 1, 2 reserved
//   host_test frame64 < FILE    frames with a 64-byte cap                    → framing-cap64.out
#include <string>

#include "arduino_shim.h"
#include "svc_companion.h"

static ShimOut out;
HardwareSerial Serial;

static int events() {
  svc_emit_hello_P(out, SVC_P("vend1"));
  svc_emit_message_P(out, SVC_P("coin"), SVC_P("{\"slot\":\"A1\",\"amount\":2}"));
  svc_emit_message_P(out, SVC_P("door"), SVC_P("open"));
  svc_emit_message(out, SVC_P("note"), "back\\slash \"quoted\" tab\there");
  svc_emit_message(out, SVC_P("note"), "line1\nline2\r\n");
  svc_emit_message(out, SVC_P("raw"), "bell\x07 esc\x1b del\x7f");
  svc_emit_message(out, SVC_P("temp"), "21.5");
  svc_emit_message(out, SVC_P("utf8"), "caf\xc3\xa9 \xe2\x9c\x93");
  svc_emit_message(out, SVC_P("empty"), "");
  return 0;
}

static int commands() {
  static SvcLineReader<256> reader;
  SvcCommandStats stats = {0, 0};
  int c;
  while ((c = getchar()) != EOF) {
    if (reader.feed((uint8_t)c)) svc_handle_command(out, reader.line(), reader.length(), 256, stats);
  }
  return 0;
}

static std::string slurp() {
  std::string s;
  int c;
  while ((c = getchar()) != EOF) s.push_back((char)c);
  return s;
}

// The sketch's loop, with the MCU infinitely fast next to the line: one byte-time per pass.
static int link(bool board) {
  std::string input = slurp();
  static SvcCompanion<HardwareSerial> companion(Serial);
  if (board) {
    shim_port[7] = NOT_A_PIN;
    companion.reserve(0);
    companion.reserve(1);
    companion.reserve(2);
  }
  Serial.feed((const uint8_t*)input.data(), input.size());
  do {
    Serial.tick();
    companion.poll();
  } while (!Serial.idle());
  fflush(stdout);
  printf("# rx overflowed %u\n", (unsigned)Serial.overflowed);
  return 0;
}

static int frame64() {
  static SvcLineReader<64> reader;
  int c;
  while ((c = getchar()) != EOF) {
    if (reader.feed((uint8_t)c)) {
      fwrite(reader.line(), 1, reader.length(), stdout);
      fputc('\n', stdout);
    }
  }
  printf("# lines %u oversized %u\n", (unsigned)reader.lines(), (unsigned)reader.oversized());
  return 0;
}

int main(int argc, char** argv) {
  shim_reset_ports();
  const char* mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "events") == 0) return events();
  if (strcmp(mode, "commands") == 0) return commands();
  if (strcmp(mode, "link") == 0) return link(false);
  if (strcmp(mode, "board") == 0) return link(true);
  if (strcmp(mode, "frame64") == 0) return frame64();
  fprintf(stderr, "usage: host_test events|commands|link|board|frame64\n");
  return 2;
}
