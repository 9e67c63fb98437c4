// Host stand-in for the Arduino Servo library (see Arduino.h beside it): it keeps the pin,
// the attach() range and the last pulse, and clamps to the range as the library does.
#ifndef MAXIM_HOST_SERVO_H
#define MAXIM_HOST_SERVO_H

#include <cstdint>

class Servo {
 public:
  int pin = -1;
  int minUs = 544;     // the library's defaults without a range given to attach()
  int maxUs = 2400;
  int us = 1500;
  bool attached = false;
  uint8_t attach(int p, int lo, int hi) {
    pin = p;
    minUs = lo;
    maxUs = hi;
    attached = true;
    return 0;
  }
  void writeMicroseconds(int value) {
    us = value < minUs ? minUs : (value > maxUs ? maxUs : value);
  }
  int readMicroseconds() { return us; }
};

#endif
