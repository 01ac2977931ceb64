// svc companion firmware for Arduino-class boards. Names itself with `hello`, reports a coin
// acceptor's pulse on pin 2 as a `coin` event, and answers ping, capabilities, gpio_read and
// gpio_write. 115200 8N1. Board name: build with -DSVC_BOARD='"vend2"' or edit the define.
#include <svc_companion.h>

#ifndef SVC_BOARD
#define SVC_BOARD "vend1"
#endif

static const uint8_t COIN_PIN = 2;  // a coin acceptor's pulse, active low
static SvcCompanion<decltype(Serial)> companion(Serial);  // HardwareSerial, or a USB core's own class
static int lastCoin = HIGH;

void setup() {
  Serial.begin(115200);
  pinMode(COIN_PIN, INPUT_PULLUP);
  // Serial owns pins 0 and 1 on an Uno; the coin input is ours. gpio_write refuses all three.
  companion.reserve(0);
  companion.reserve(1);
  companion.reserve(COIN_PIN);
  companion.hello(SVC_P(SVC_BOARD));
}

void loop() {
  companion.poll();
  int coin = digitalRead(COIN_PIN);
  if (coin != lastCoin) {
    lastCoin = coin;
    if (coin == LOW) companion.event_P(SVC_P("coin"), SVC_P("{\"slot\":\"A1\",\"amount\":1}"));
  }
}
