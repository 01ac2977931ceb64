// The host build's <Arduino.h>: the shim (boards/firmware/host/arduino_shim.h).
#include "arduino_shim.h"
