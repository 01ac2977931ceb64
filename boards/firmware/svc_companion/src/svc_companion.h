// svc companion: the board side of the svc hub's line protocol (DESIGN "The board line protocol").
// Say hello, send `message` events, answer ping, capabilities, gpio_read and gpio_write.
//
//   #include <svc_companion.h>
//   SvcCompanion<decltype(Serial)> companion(Serial);
//   void setup() { Serial.begin(115200); companion.hello(SVC_P("vend1")); }
//   void loop() { companion.poll(); ... companion.event_P(SVC_P("coin"), SVC_P("{\"amount\":1}")); }
//
// Why the writes pump the receiver: an Uno's UART keeps 63 received bytes; once its 64-byte
// transmit buffer is full, Serial.write waits, and a command arriving meanwhile overflows the
// receive buffer and is lost. Here every write that would wait reads instead, completed lines are
// parsed into a small queue (8 bytes each), and answered in order once the current line is out.
#ifndef SVC_COMPANION_H
#define SVC_COMPANION_H

#include <Arduino.h>

#include "svc_commands.h"

#ifndef SVC_LINE_CAP
#define SVC_LINE_CAP 256  // bytes; longer command lines are dropped whole
#endif
#ifndef SVC_QUEUE
#define SVC_QUEUE 4  // parsed commands waiting while a line is written; past it, reading pauses
#endif

// IO is a Stream with availableForWrite(): HardwareSerial on AVR and most cores.
template <class IO>
class SvcCompanion {
 public:
  explicit SvcCompanion(IO& io) : io_(io), head_(0), count_(0) {}

  // Pins the sketch uses itself (the serial pins, its inputs): gpio_write refuses them.
  void reserve(uint8_t pin) { reserved_.add(pin); }

  // `{"event":"hello",...,"fw":…,"proto":…}`: the board name in flash (SVC_P("vend1")); the
  // firmware's name, version and protocol from its identity (svc_identity.h).
  void hello(SvcFlashStr board) { svc_emit_hello_P(*this, board); }

  // A `message` event with fixed text (both in flash) or text made at run time (in RAM).
  void event_P(SvcFlashStr signal, SvcFlashStr text) { svc_emit_message_P(*this, signal, text); }
  void event(SvcFlashStr signal, const char* text) { svc_emit_message(*this, signal, text); }

  // Reads what has arrived and answers every complete command. Call it from loop().
  void poll() {
    pump();
    while (count_ > 0) {
      SvcCommand cmd = queue_[head_];
      head_ = (uint8_t)((head_ + 1) % SVC_QUEUE);
      count_--;
      stats_.answered++;
      svc_answer_command(*this, cmd, SVC_LINE_CAP);
      pump();
    }
  }

  // The byte sink for the encoders: never waits on a full transmit buffer without reading.
  size_t write(uint8_t b) {
    while (io_.availableForWrite() <= 0) pump();
    return io_.write(b);
  }

  const SvcCommandStats& stats() const { return stats_; }
  uint32_t oversized() const { return reader_.oversized(); }

 private:
  // Moves received bytes into the line buffer, and complete lines into the queue, until the
  // receiver is empty or the queue is full (then the bytes wait in the UART's own buffer).
  void pump() {
    while (count_ < SVC_QUEUE && io_.available() > 0) {
      if (!reader_.feed((uint8_t)io_.read())) continue;
      SvcCommand& slot = queue_[(head_ + count_) % SVC_QUEUE];
      if (svc_parse_command(reader_.line(), reader_.length(), reserved_, &slot))
        count_++;
      else
        stats_.rejected++;
    }
  }

  IO& io_;
  SvcLineReader<SVC_LINE_CAP> reader_;
  SvcPinSet reserved_;
  SvcCommand queue_[SVC_QUEUE];
  uint8_t head_;
  uint8_t count_;
  SvcCommandStats stats_ = {0, 0};
};

#endif
