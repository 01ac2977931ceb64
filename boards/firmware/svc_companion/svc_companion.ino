// svc companion firmware for Arduino-class boards. Names itself with `hello`, reports events as
// `message` lines, and answers ping, gpio_read, gpio_write and capabilities. 115200 8N1.
// Framing and encoding live in svc_line.h (host-tested against boards/golden/).
#include "svc_commands.h"

#ifndef SVC_BOARD
#define SVC_BOARD "vend1"
#endif
#define SVC_LINE_CAP 256  // bytes; longer command lines are dropped whole

static SvcLineReader<SVC_LINE_CAP> reader;
static SvcCommandStats stats = {0, 0};
static const uint8_t COIN_PIN = 2;  // a coin acceptor's pulse, active low
static int lastCoin = HIGH;

void setup() {
  Serial.begin(115200);
  pinMode(COIN_PIN, INPUT_PULLUP);
  svc_emit_hello(Serial, SVC_BOARD, SVC_FW);
}

void loop() {
  while (Serial.available() > 0) {
    if (reader.feed((uint8_t)Serial.read())) {
      svc_handle_command(Serial, reader.line(), reader.length(), SVC_LINE_CAP, stats);
    }
  }
  int coin = digitalRead(COIN_PIN);
  if (coin != lastCoin) {
    lastCoin = coin;
    if (coin == LOW) svc_emit_message(Serial, "coin", "{\"slot\":\"A1\",\"amount\":1}");
  }
}
