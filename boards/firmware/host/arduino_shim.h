// Just enough of the Arduino API for the companion library to compile and run on the host, with
// the chip's failure modes kept: a pin past the core's tables aborts (on an ATmega328P it reads or
// writes whatever address follows the table), and Serial models a UART's fixed buffers in time.
#ifndef ARDUINO_SHIM_H
#define ARDUINO_SHIM_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HIGH 1
#define LOW 0
#define INPUT 0
#define OUTPUT 1
#define INPUT_PULLUP 2

// A 70-pin board (a Mega's count, as the golden replies say). shim_port[] is the core's
// digital_pin_to_port table; a test may mark a pin NOT_A_PIN to model a board with gaps.
#define NUM_DIGITAL_PINS 70
#define NUM_ANALOG_INPUTS 16
#define NOT_A_PIN 0
static uint8_t shim_port[NUM_DIGITAL_PINS];
static uint8_t shim_pins[NUM_DIGITAL_PINS];
static uint8_t shim_modes[NUM_DIGITAL_PINS];
inline void shim_reset_ports() { memset(shim_port, 1, sizeof shim_port); }
#define digitalPinToPort(p) ((p) < NUM_DIGITAL_PINS ? shim_port[(p)] : NOT_A_PIN)

inline void shim_check_pin(uint8_t pin) {
  if (pin >= NUM_DIGITAL_PINS || shim_port[pin] == NOT_A_PIN) {
    fprintf(stderr, "shim: pin %u is not on this board: the chip would touch a wrong address\n", pin);
    abort();
  }
}
// A pull-up reads HIGH until something pulls the pin low, as on the real chip.
inline void pinMode(uint8_t pin, uint8_t mode) {
  shim_check_pin(pin);
  shim_modes[pin] = mode;
  if (mode == INPUT_PULLUP) shim_pins[pin] = 1;
}
inline void digitalWrite(uint8_t pin, uint8_t v) {
  shim_check_pin(pin);
  shim_pins[pin] = v ? HIGH : LOW;
}
inline int digitalRead(uint8_t pin) {
  shim_check_pin(pin);
  return shim_pins[pin];
}

// Analog inputs A0..A15 are pins 54..69, as on a Mega; analogRead takes the pin (or the input's
// number, as AVR cores also accept) and aborts on anything else.
#define analogInputToDigitalPin(p) (((p) < NUM_ANALOG_INPUTS) ? (p) + 54 : -1)
static uint16_t shim_analog[NUM_ANALOG_INPUTS];
inline int analogRead(uint8_t pin) {
  if (pin >= 54) pin -= 54;
  if (pin >= NUM_ANALOG_INPUTS) {
    fprintf(stderr, "shim: analog input %u is not on this board\n", pin);
    abort();
  }
  return shim_analog[pin];
}

// Serial's Print::write, onto stdout.
struct ShimOut {
  size_t write(uint8_t b) { return fputc(b, stdout) == EOF ? 0 : 1; }
};

// HardwareSerial as on an AVR core: 64-byte receive and transmit rings (63 usable each), written
// out to stdout. Time passes in byte-times at the line's speed (tick): each tick one transmitted
// byte leaves and the next byte the hub sent back to back arrives, or is lost if the receive ring
// is full (counted in overflowed, as the chip would lose it silently).
struct HardwareSerial : ShimOut {
  const uint8_t* in = 0;
  size_t inLen = 0, inPos = 0;
  uint8_t rx[64];
  uint8_t rxHead = 0, rxTail = 0;
  size_t txUsed = 0;
  uint32_t overflowed = 0;

  void begin(long) {}
  void feed(const uint8_t* bytes, size_t len) {
    in = bytes;
    inLen = len;
    inPos = 0;
  }
  void tick() {
    if (txUsed) txUsed--;
    if (inPos < inLen) {
      uint8_t next = (uint8_t)((rxHead + 1) % 64);
      if (next == rxTail) {
        overflowed++;
      } else {
        rx[rxHead] = in[inPos];
        rxHead = next;
      }
      inPos++;
    }
  }
  bool idle() const { return inPos >= inLen && rxHead == rxTail && txUsed == 0; }
  int available() { return (rxHead - rxTail + 64) % 64; }
  int read() {
    if (rxHead == rxTail) return -1;
    uint8_t b = rx[rxTail];
    rxTail = (uint8_t)((rxTail + 1) % 64);
    return b;
  }
  // A caller that finds the transmit ring full is spinning: one byte-time passes per look.
  int availableForWrite() {
    if (txUsed >= 63) {
      tick();
      return 0;
    }
    return (int)(63 - txUsed);
  }
  size_t write(uint8_t b) {
    while (txUsed >= 63) tick();  // Serial.write blocks here, reading nothing
    txUsed++;
    return ShimOut::write(b);
  }
};
#endif
