// Just enough of the Arduino API for svc_commands.h to compile and run on the host.
#ifndef ARDUINO_SHIM_H
#define ARDUINO_SHIM_H
#include <stdint.h>
#include <stdio.h>

#define HIGH 1
#define LOW 0
#define INPUT 0
#define OUTPUT 1
#define INPUT_PULLUP 2

static uint8_t shim_pins[70];
static uint8_t shim_modes[70];
// A pull-up reads HIGH until something pulls the pin low, as on the real chip.
inline void pinMode(uint8_t pin, uint8_t mode) {
  if (pin >= 70) return;
  shim_modes[pin] = mode;
  if (mode == INPUT_PULLUP) shim_pins[pin] = 1;
}
inline void digitalWrite(uint8_t pin, uint8_t v) { if (pin < 70) shim_pins[pin] = v ? HIGH : LOW; }
inline int digitalRead(uint8_t pin) { return pin < 70 ? shim_pins[pin] : LOW; }

// Serial's Print::write, onto stdout.
struct ShimOut {
  size_t write(uint8_t b) { return fputc(b, stdout) == EOF ? 0 : 1; }
};
#endif
