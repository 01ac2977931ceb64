// Constant strings in flash: on an AVR a plain string literal is copied into RAM at start-up
// (Harvard architecture), so every literal the firmware writes lives in program memory and is read
// back a byte at a time. Elsewhere (the host test, ARM and ESP cores) flash is addressable and these
// are plain pointers.
#ifndef SVC_PGM_H
#define SVC_PGM_H

#include <stdint.h>
#include <string.h>

#if defined(__AVR__)
#include <avr/pgmspace.h>
#define SVC_P(s) PSTR(s)
#define SVC_PROGMEM PROGMEM
#define svc_pgm_byte(p) pgm_read_byte(p)
#define svc_strcmp_P(ram, flash) strcmp_P((ram), (flash))
#else
#define SVC_P(s) (s)
#define SVC_PROGMEM
#define svc_pgm_byte(p) (*(const uint8_t*)(p))
#define svc_strcmp_P(ram, flash) strcmp((ram), (flash))
#endif

// A string in program memory (SVC_P("...")): a distinct name so RAM and flash pointers are not mixed.
typedef const char* SvcFlashStr;

#endif
