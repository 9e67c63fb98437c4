// A host stand-in for the few Arduino APIs maxim_head_servo.ino uses, so that the sketch
// itself can be built with g++ and fed bytes in a test (test_serial_board.py). Not Arduino:
// millis() is set by the driver program (host_main.cpp), Serial reads from a queue it fills
// and writes to a string it prints.
#ifndef MAXIM_HOST_ARDUINO_H
#define MAXIM_HOST_ARDUINO_H

#include <cstdint>
#include <deque>
#include <string>

extern unsigned long hostMillis;
inline unsigned long millis() { return hostMillis; }
// No interrupts on the host: the servo pulses are not timed here.
inline void noInterrupts() {}
inline void interrupts() {}

class HostSerial {
 public:
  std::deque<char> input;
  std::string output;
  long baud = 0;
  void begin(long rate) { baud = rate; }
  int available() { return static_cast<int>(input.size()); }
  int read() {
    if (input.empty()) {
      return -1;
    }
    char c = input.front();
    input.pop_front();
    return static_cast<unsigned char>(c);
  }
  void print(char c) { output += c; }
  void print(const char *s) { output += s; }
  void print(long v) { output += std::to_string(v); }
  void print(int v) { output += std::to_string(v); }
};

extern HostSerial Serial;

#endif
