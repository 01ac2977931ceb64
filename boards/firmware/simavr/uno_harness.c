// An Arduino Uno in simavr for tests and benches: an ATmega328P at 16 MHz running a sketch's ELF,
// UART0 on a pseudo-terminal (simavr's uart_pty part) that the hub's bridge opens like a USB
// serial port, held to real time so the line runs at its real speed. A control channel on stdin
// drives the pins a test cannot reach through the serial line. Answers on stdout start with "@ ".
//
//   uno_harness FIRMWARE.elf [--link PATH] [--paused]
//     --link PATH   also make PATH a symlink to the pty (stable across restarts of the harness)
//     --paused      hold the MCU in reset until `run` (so the hub can open the port first)
//   stdin:
//     run                  start the MCU                          → @ running
//     pin N 0|1            drive Arduino pin N as an input         → @ pin N V
//     pulse N MS           drive pin N low for MS ms of MCU time   → @ pulse N
//     read N               pin N as the MCU drives it              → @ read N ddr=D port=P
//     adc N MV             put MV millivolts on analog input N     → @ adc N MV
//     state                whether the MCU still runs              → @ state running|halted cycles=C
//   and unprompted: @ pty PATH at start, @ halted REASON pc=0x… if the MCU stops.
//
// Build: gcc -O2 -I/usr/include/simavr uno_harness.c -lsimavrparts -lsimavr -lpthread -lutil
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "avr_adc.h"
#include "avr_ioport.h"
#include "parts/uart_pty.h"
#include "sim_avr.h"
#include "sim_elf.h"
#include "sim_time.h"

static avr_t* avr;
static uart_pty_t uart;

// Lines from stdin, handed from the reading thread to the simulation thread (simavr is not
// thread-safe; only the simulation thread touches the MCU).
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char pending[64][64];
static int pendingCount;

static void say(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("@ ", stdout);
  vprintf(fmt, ap);
  fputc('\n', stdout);
  fflush(stdout);
  va_end(ap);
}

static void* readControl(void* arg) {
  (void)arg;
  char line[64];
  while (fgets(line, sizeof line, stdin)) {
    pthread_mutex_lock(&lock);
    if (pendingCount < 64) {
      strcpy(pending[pendingCount++], line);
    }
    pthread_mutex_unlock(&lock);
  }
  // The test closed our stdin or went away: nothing left to drive us.
  exit(0);
  return NULL;
}

// The Uno's pin map (variants/standard/pins_arduino.h): 0-7 on port D, 8-13 on B, 14-19 (A0-A5) on C.
static int portOf(int pin, char* port, int* bit) {
  if (pin >= 0 && pin <= 7) *port = 'D', *bit = pin;
  else if (pin >= 8 && pin <= 13) *port = 'B', *bit = pin - 8;
  else if (pin >= 14 && pin <= 19) *port = 'C', *bit = pin - 14;
  else return 0;
  return 1;
}

static void drive(int pin, int level) {
  char port;
  int bit;
  if (portOf(pin, &port, &bit)) avr_raise_irq(avr_io_getirq(avr, AVR_IOCTL_IOPORT_GETIRQ(port), bit), level);
}

static avr_cycle_count_t release(avr_t* a, avr_cycle_count_t when, void* param) {
  (void)a;
  (void)when;
  drive((int)(intptr_t)param, 1);
  return 0;
}

static int running;
static int halted;

static void control(const char* line) {
  int n, v;
  if (strncmp(line, "run", 3) == 0) {
    running = 1;
    say("running");
  } else if (sscanf(line, "pin %d %d", &n, &v) == 2) {
    drive(n, v != 0);
    say("pin %d %d", n, v != 0);
  } else if (sscanf(line, "pulse %d %d", &n, &v) == 2) {
    drive(n, 0);
    avr_cycle_timer_register(avr, avr_usec_to_cycles(avr, (uint32_t)v * 1000), release, (void*)(intptr_t)n);
    say("pulse %d", n);
  } else if (sscanf(line, "read %d", &n) == 1) {
    char port;
    int bit;
    avr_ioport_state_t st;
    if (!portOf(n, &port, &bit) || avr_ioctl(avr, AVR_IOCTL_IOPORT_GETSTATE(port), &st) != 0) {
      say("read %d none", n);
    } else {
      say("read %d ddr=%d port=%d", n, (int)((st.ddr >> bit) & 1), (int)((st.port >> bit) & 1));
    }
  } else if (sscanf(line, "adc %d %d", &n, &v) == 2 && n >= 0 && n < 8) {
    avr_raise_irq(avr_io_getirq(avr, AVR_IOCTL_ADC_GETIRQ, ADC_IRQ_ADC0 + n), (uint32_t)v);
    say("adc %d %d", n, v);
  } else if (strncmp(line, "state", 5) == 0) {
    say("state %s cycles=%llu", halted ? "halted" : "running", (unsigned long long)avr->cycle);
  } else {
    say("error unknown command: %.40s", line);
  }
}

static uint64_t nowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char** argv) {
  const char* elf = NULL;
  const char* link = NULL;
  int paused = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--link") == 0 && i + 1 < argc) link = argv[++i];
    else if (strcmp(argv[i], "--paused") == 0) paused = 1;
    else elf = argv[i];
  }
  if (!elf) {
    fprintf(stderr, "usage: uno_harness FIRMWARE.elf [--link PATH] [--paused]\n");
    return 2;
  }
  elf_firmware_t fw;
  memset(&fw, 0, sizeof fw);
  if (elf_read_firmware(elf, &fw) != 0) {
    fprintf(stderr, "uno_harness: cannot read %s\n", elf);
    return 1;
  }
  strcpy(fw.mmcu, "atmega328p");
  fw.frequency = 16000000;
  avr = avr_make_mcu_by_name(fw.mmcu);
  if (!avr) return 1;
  avr_init(avr);
  avr->log = LOG_WARNING;
  // An Uno's supply: AVCC (the analogRead reference by default) and AREF at 5 V.
  avr->vcc = avr->avcc = avr->aref = 5000;
  avr_load_firmware(avr, &fw);

  uart_pty_init(avr, &uart);
  uart_pty_connect(&uart, '0');
  if (link) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.new", link);
    unlink(tmp);
    if (symlink(uart.pty.slavename, tmp) != 0 || rename(tmp, link) != 0) {
      fprintf(stderr, "uno_harness: cannot link %s: %s\n", link, strerror(errno));
      return 1;
    }
  }
  // The coin input idles high (its pull-up); simavr leaves an undriven input low.
  drive(2, 1);
  say("pty %s", uart.pty.slavename);

  pthread_t reader;
  pthread_create(&reader, NULL, readControl, NULL);
  running = !paused;

  uint64_t base = nowNs();
  avr_cycle_count_t baseCycle = avr->cycle;
  for (;;) {
    char todo[64][64];
    int n = 0;
    pthread_mutex_lock(&lock);
    n = pendingCount;
    memcpy(todo, pending, sizeof(todo[0]) * (size_t)n);
    pendingCount = 0;
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < n; i++) control(todo[i]);

    if (!running || halted) {
      usleep(1000);
      base = nowNs();
      baseCycle = avr->cycle;
      continue;
    }
    for (int i = 0; i < 2000 && !halted; i++) {
      int st = avr_run(avr);
      if (st == cpu_Done || st == cpu_Crashed) {
        halted = 1;
        say("halted %s pc=0x%x", st == cpu_Crashed ? "crashed" : "done", (unsigned)avr->pc);
      }
    }
    // Real time: sleep while the MCU is ahead of the clock; after a stall (SIGSTOP, a busy host)
    // start counting again instead of racing to catch up.
    uint64_t emu = avr_cycles_to_nsec(avr, avr->cycle - baseCycle);
    uint64_t wall = nowNs() - base;
    if (emu > wall + 200000) {
      struct timespec ts = {0, (long)(emu - wall)};
      nanosleep(&ts, NULL);
    } else if (wall > emu + 50000000ull) {
      base = nowNs();
      baseCycle = avr->cycle;
    }
  }
}
