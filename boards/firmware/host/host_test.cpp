// Host build of the companion firmware's framing and encoding. test/boards/firmware.test.ts
// compiles this with g++ and compares what it prints with the golden files in boards/golden/.
//   host_test events            the fixed event scenario           → events.lines
//   host_test commands < FILE   answers each command line          → replies.lines
//   host_test frame64 < FILE    frames with a 64-byte cap           → framing-cap64.out
#include "arduino_shim.h"
#include "../svc_companion/svc_commands.h"

static ShimOut out;

static int events() {
  svc_emit_hello(out, "vend1", SVC_FW);
  svc_emit_message(out, "coin", "{\"slot\":\"A1\",\"amount\":2}");
  svc_emit_message(out, "door", "open");
  svc_emit_message(out, "note", "back\\slash \"quoted\" tab\there");
  svc_emit_message(out, "note", "line1\nline2\r\n");
  svc_emit_message(out, "raw", "bell\x07 esc\x1b del\x7f");
  svc_emit_message(out, "temp", "21.5");
  svc_emit_message(out, "utf8", "caf\xc3\xa9 \xe2\x9c\x93");
  svc_emit_message(out, "empty", "");
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
  const char* mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "events") == 0) return events();
  if (strcmp(mode, "commands") == 0) return commands();
  if (strcmp(mode, "frame64") == 0) return frame64();
  fprintf(stderr, "usage: host_test events|commands|frame64\n");
  return 2;
}
