// An Arduino Uno in simavr for tests and benches: an ATmega328P at 16 MHz running a sketch (ELF or
// Intel HEX), UART0 on a pseudo-terminal (simavr's uart_pty part) that the hub's bridge opens like
// a USB serial port, held to real time so the line runs at its real speed. A control channel on
// stdin drives the pins a test cannot reach through the serial line. Answers on stdout start with
// "@ ".
//
// With --boot, a bootloader (optiboot) sits in the boot section and the MCU starts there, as an
// Uno's BOOTRST fuse makes it: at power-on, after an external reset and after a watchdog reset.
// Flash lives as long as the process, so what the bootloader writes (SPM, through simavr's
// avr_flash) survives every reset until the harness exits.
//
//   uno_harness APP.elf|APP.hex [--boot BOOT.hex] [--link PATH] [--paused]
//     --boot HEX    load a bootloader and start there (its lowest address is the reset vector)
//     --link PATH   also make PATH a symlink to the pty (stable across restarts of the harness)
//     --paused      hold the MCU in reset until `run` (so the hub can open the port first)
//   stdin:
//     run                  start the MCU                          → @ running
//     reset                pulse RESET: restart with EXTRF set     → @ reset
//     dump PATH            write the whole flash, raw, to PATH     → @ dump BYTES | dump error …
//     pin N 0|1            drive Arduino pin N as an input         → @ pin N V
//     pulse N MS           drive pin N low for MS ms of MCU time   → @ pulse N
//     read N               pin N as the MCU drives it              → @ read N ddr=D port=P
//     adc N MV             put MV millivolts on analog input N     → @ adc N MV
//     state                whether the MCU still runs              → @ state running|halted cycles=C pc=0x…
//   SIGUSR1: the same pulse on RESET (for a reset command such as `kill -USR1 PID`) → @ reset signal
//   and unprompted: @ pty PATH at start, @ boot 0xADDR SIZE with --boot, @ halted REASON pc=0x… if
//   the MCU stops. Bad input (a file that is not ELF or Intel HEX, a record past the end of flash)
//   exits with status 1 and says what and where on stderr.
//
// Build: gcc -O2 -I/usr/include/simavr uno_harness.c -lsimavrparts -lsimavr -lpthread -lutil
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "avr_adc.h"
#include "avr_ioport.h"
#include "avr_uart.h"
#include "parts/uart_pty.h"
#include "sim_avr.h"
#include "sim_elf.h"
#include "sim_time.h"

#define FLASH_SIZE 32768
#define LINE_MAX_LEN 1024

static avr_t* avr;
static uart_pty_t uart;

// Lines from stdin, handed from the reading thread to the simulation thread (simavr is not
// thread-safe; only the simulation thread touches the MCU).
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char pending[32][LINE_MAX_LEN];
static int pendingCount;
// Set by SIGUSR1; the run loop does the reset (nothing in a signal handler may touch the MCU).
static volatile sig_atomic_t resetSignalled;

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
  char line[LINE_MAX_LEN];
  while (fgets(line, sizeof line, stdin)) {
    pthread_mutex_lock(&lock);
    if (pendingCount < 32) {
      strcpy(pending[pendingCount++], line);
    }
    pthread_mutex_unlock(&lock);
  }
  // The test closed our stdin or went away: nothing left to drive us.
  exit(0);
  return NULL;
}

static void onUsr1(int sig) {
  (void)sig;
  resetSignalled = 1;
}

// An image in flash: bytes from `lo` to `hi` (exclusive) set, the rest 0xFF.
typedef struct {
  uint8_t bytes[FLASH_SIZE];
  uint32_t lo, hi;
} image_t;

static int hexByte(const char* s, int* out) {
  int v = 0;
  for (int i = 0; i < 2; i++) {
    char c = s[i];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= c - '0';
    else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
    else return 0;
  }
  *out = v;
  return 1;
}

// Intel HEX into `img`; on bad input, a message naming the file and line. Data past the end of
// flash is refused, as avrdude refuses it: a chip holds no such address.
static int readHex(const char* path, image_t* img, char* err, size_t errLen) {
  FILE* f = fopen(path, "r");
  if (!f) {
    snprintf(err, errLen, "cannot read %s: %s", path, strerror(errno));
    return 0;
  }
  char line[600];
  int lineNo = 0, ended = 0;
  uint32_t base = 0;
  while (fgets(line, sizeof line, f)) {
    lineNo++;
    size_t n = strcspn(line, "\r\n");
    line[n] = 0;
    if (n == 0) continue;
    if (ended) {
      snprintf(err, errLen, "%s line %d: a record after the end-of-file record", path, lineNo);
      break;
    }
    int rec[260], count = 0, sum = 0;
    if (line[0] != ':' || (n - 1) % 2 != 0 || n < 11) {
      snprintf(err, errLen, "%s line %d: not an Intel HEX record", path, lineNo);
      break;
    }
    int ok = 1;
    for (size_t i = 1; i < n; i += 2) {
      if (count >= 260 || !hexByte(line + i, &rec[count])) {
        ok = 0;
        break;
      }
      sum += rec[count++];
    }
    if (!ok || count != rec[0] + 5) {
      snprintf(err, errLen, "%s line %d: not an Intel HEX record", path, lineNo);
      break;
    }
    if ((sum & 0xff) != 0) {
      snprintf(err, errLen, "%s line %d: bad checksum", path, lineNo);
      break;
    }
    int len = rec[0], type = rec[3];
    uint32_t addr = base + (uint32_t)((rec[1] << 8) | rec[2]);
    if (type == 0) {
      if (addr + (uint32_t)len > FLASH_SIZE) {
        snprintf(err, errLen, "%s line %d: data at 0x%04x-0x%04x, past the end of flash (0x%04x)", path, lineNo,
                 addr, addr + (uint32_t)len - 1, FLASH_SIZE - 1);
        break;
      }
      for (int i = 0; i < len; i++) img->bytes[addr + (uint32_t)i] = (uint8_t)rec[4 + i];
      if (len > 0) {
        if (addr < img->lo) img->lo = addr;
        if (addr + (uint32_t)len > img->hi) img->hi = addr + (uint32_t)len;
      }
    } else if (type == 1) {
      ended = 1;
    } else if (type == 2) {
      base = (uint32_t)((rec[4] << 8) | rec[5]) << 4;
    } else if (type == 4) {
      base = (uint32_t)((rec[4] << 8) | rec[5]) << 16;
    } else if (type != 3 && type != 5) {
      snprintf(err, errLen, "%s line %d: unknown record type %02x", path, lineNo, type);
      break;
    }
  }
  fclose(f);
  if (err[0]) return 0;
  if (img->hi == 0) {
    snprintf(err, errLen, "%s: no data records", path);
    return 0;
  }
  return 1;
}

static int isElf(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) return 0;
  char magic[4] = {0};
  size_t n = fread(magic, 1, 4, f);
  fclose(f);
  return n == 4 && memcmp(magic, "\x7f" "ELF", 4) == 0;
}

static int readApp(const char* path, image_t* img, char* err, size_t errLen) {
  if (!isElf(path)) return readHex(path, img, err, errLen);
  elf_firmware_t fw;
  memset(&fw, 0, sizeof fw);
  if (elf_read_firmware(path, &fw) != 0 || fw.flashsize == 0) {
    snprintf(err, errLen, "cannot read %s as an AVR ELF", path);
    return 0;
  }
  if (fw.flashbase + fw.flashsize > FLASH_SIZE) {
    snprintf(err, errLen, "%s: %u bytes of flash from 0x%04x, past the end of flash (0x%04x)", path, fw.flashsize,
             fw.flashbase, FLASH_SIZE - 1);
    return 0;
  }
  memcpy(img->bytes + fw.flashbase, fw.flash, fw.flashsize);
  img->lo = fw.flashbase;
  img->hi = fw.flashbase + fw.flashsize;
  return 1;
}

// The Uno's pin map (variants/standard/pins_arduino.h): 0-7 on port D, 8-13 on B, 14-19 (A0-A5) on C.
static int portOf(int pin, char* port, int* bit) {
  if (pin >= 0 && pin <= 7) *port = 'D', *bit = pin;
  else if (pin >= 8 && pin <= 13) *port = 'B', *bit = pin - 8;
  else if (pin >= 14 && pin <= 19) *port = 'C', *bit = pin - 14;
  else return 0;
  return 1;
}

// What the harness drives on each pin from outside the chip (-1: nothing), and which pins are in
// a `pulse`, so a reset can put the outside world back (below).
static signed char driven[20];
static char pulsing[20];

static void drive(int pin, int level) {
  char port;
  int bit;
  if (!portOf(pin, &port, &bit)) return;
  driven[pin] = (signed char)level;
  avr_raise_irq(avr_io_getirq(avr, AVR_IOCTL_IOPORT_GETIRQ(port), bit), level);
}

static avr_cycle_count_t release(avr_t* a, avr_cycle_count_t when, void* param) {
  (void)a;
  (void)when;
  int pin = (int)(intptr_t)param;
  pulsing[pin] = 0;
  drive(pin, 1);
  return 0;
}

// Every reset (external, watchdog) goes through avr_reset, which zeroes the I/O registers, the
// PINx inputs among them, and cancels the cycle timers. The levels outside the chip stay what they
// were, but simavr passes a pin's level on only when it changes, so they are put back here: a
// coin input read low after a reset would be a coin nobody paid. A pulse cut short by the reset
// ends now.
static void (*coreReset)(avr_t*);
static void onReset(avr_t* a) {
  if (coreReset) coreReset(a);
  for (int pin = 0; pin < 20; pin++) {
    char port;
    int bit;
    if (pulsing[pin]) pulsing[pin] = 0, driven[pin] = 1;
    if (driven[pin] < 0 || !portOf(pin, &port, &bit)) continue;
    avr_irq_t* irq = avr_io_getirq(a, AVR_IOCTL_IOPORT_GETIRQ(port), bit);
    irq->value = !driven[pin];
    avr_raise_irq(irq, (uint32_t)driven[pin]);
  }
}

static int running;
static int halted;

// RESET pulled low and let go. The registers return to their reset values (simavr's avr_reset,
// which also starts at reset_pc, the bootloader when there is one); flash is untouched; MCUSR
// keeps the flags it had, as the chip's does until written, and gains EXTRF, which is what
// optiboot looks for before it listens.
static void externalReset(void) {
  uint8_t mcusr = avr->data[avr->reset_flags.extrf.reg];
  avr_reset(avr);
  avr->data[avr->reset_flags.extrf.reg] |= mcusr;
  avr_regbit_set(avr, avr->reset_flags.extrf);
  halted = 0;
}

static void control(const char* line) {
  int n, v;
  char path[LINE_MAX_LEN];
  if (strncmp(line, "run", 3) == 0) {
    running = 1;
    say("running");
  } else if (strncmp(line, "reset", 5) == 0) {
    externalReset();
    say("reset");
  } else if (sscanf(line, "dump %1023[^\r\n]", path) == 1) {
    FILE* f = fopen(path, "wb");
    size_t size = avr->flashend + 1;
    if (!f || fwrite(avr->flash, 1, size, f) != size) {
      say("dump error %s: %s", path, strerror(errno));
    } else {
      say("dump %zu", size);
    }
    if (f) fclose(f);
  } else if (sscanf(line, "pin %d %d", &n, &v) == 2) {
    drive(n, v != 0);
    say("pin %d %d", n, v != 0);
  } else if (sscanf(line, "pulse %d %d", &n, &v) == 2) {
    drive(n, 0);
    if (n >= 0 && n < 20) pulsing[n] = 1;
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
    say("state %s cycles=%llu pc=0x%04x", halted ? "halted" : "running", (unsigned long long)avr->cycle,
        (unsigned)avr->pc);
  } else {
    say("error unknown command: %.40s", line);
  }
}

static uint64_t nowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static image_t app, boot;

int main(int argc, char** argv) {
  const char* appPath = NULL;
  const char* bootPath = NULL;
  const char* link = NULL;
  int paused = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--link") == 0 && i + 1 < argc) link = argv[++i];
    else if (strcmp(argv[i], "--boot") == 0 && i + 1 < argc) bootPath = argv[++i];
    else if (strcmp(argv[i], "--paused") == 0) paused = 1;
    else appPath = argv[i];
  }
  if (!appPath) {
    fprintf(stderr, "usage: uno_harness APP.elf|APP.hex [--boot BOOT.hex] [--link PATH] [--paused]\n");
    return 2;
  }
  char err[1200] = "";
  memset(app.bytes, 0xff, sizeof app.bytes);
  app.lo = FLASH_SIZE;
  if (!readApp(appPath, &app, err, sizeof err)) {
    fprintf(stderr, "uno_harness: %s\n", err);
    return 1;
  }
  memset(boot.bytes, 0xff, sizeof boot.bytes);
  boot.lo = FLASH_SIZE;
  if (bootPath) {
    if (!readHex(bootPath, &boot, err, sizeof err)) {
      fprintf(stderr, "uno_harness: %s\n", err);
      return 1;
    }
    if (app.hi > boot.lo) {
      fprintf(stderr, "uno_harness: %s reaches 0x%04x, into the bootloader at 0x%04x\n", appPath, app.hi - 1,
              boot.lo);
      return 1;
    }
  }

  avr = avr_make_mcu_by_name("atmega328p");
  if (!avr) return 1;
  avr_init(avr);
  memset(driven, -1, sizeof driven);
  coreReset = avr->reset;
  avr->reset = onReset;
  avr->log = LOG_WARNING;
  avr->frequency = 16000000;
  // An Uno's supply: AVCC (the analogRead reference by default) and AREF at 5 V.
  avr->vcc = avr->avcc = avr->aref = 5000;
  avr_loadcode(avr, app.bytes + app.lo, app.hi - app.lo, app.lo);
  if (bootPath) {
    avr_loadcode(avr, boot.bytes + boot.lo, boot.hi - boot.lo, boot.lo);
    // BOOTRST: every reset, and this first power-on, starts in the boot section.
    avr->reset_pc = boot.lo;
    avr->pc = boot.lo;
  }
  // simavr checks jumps against codeend only when tracing; all of flash is code now.
  avr->codeend = avr->flashend;

  uart_pty_init(avr, &uart);
  uart_pty_connect(&uart, '0');
  // simavr sleeps a microsecond (in practice far more) on every read of UCSR0A that finds nothing
  // to do. A sketch's interrupt-driven Serial hardly notices; a bootloader that polls UCSR0A for
  // its next byte would run at a few tens of kHz, and its 1 s watchdog would take minutes. The
  // run loop below holds the MCU to real time instead.
  uint32_t uartFlags = 0;
  avr_ioctl(avr, AVR_IOCTL_UART_GET_FLAGS('0'), &uartFlags);
  uartFlags &= ~(uint32_t)AVR_UART_FLAG_POLL_SLEEP;
  avr_ioctl(avr, AVR_IOCTL_UART_SET_FLAGS('0'), &uartFlags);
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
  // Before the pty is announced: from then on a reset command may signal at any moment.
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = onUsr1;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, NULL);

  say("pty %s", uart.pty.slavename);
  if (bootPath) say("boot 0x%04x %u", boot.lo, boot.hi - boot.lo);

  pthread_t reader;
  pthread_create(&reader, NULL, readControl, NULL);
  running = !paused;

  uint64_t base = nowNs();
  avr_cycle_count_t baseCycle = avr->cycle;
  static char todo[32][LINE_MAX_LEN];
  for (;;) {
    int n = 0;
    pthread_mutex_lock(&lock);
    n = pendingCount;
    memcpy(todo, pending, sizeof(todo[0]) * (size_t)n);
    pendingCount = 0;
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < n; i++) control(todo[i]);
    if (resetSignalled) {
      resetSignalled = 0;
      externalReset();
      say("reset signal");
    }

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
