// Runs maxim_head_servo.ino on the host: stdin gives one chunk of serial input per line,
// "<millis> <hex bytes>" ("-" for none); for each, millis() is set, the bytes are queued and
// loop() runs once. stdout gets one line for setup() and one per chunk:
// "<hex of what the sketch wrote> <pan us> <tilt us>" ("-" for a servo not attached: no
// pulse). Built by test_serial_board.py with
//   g++ -std=c++17 -I<this folder> -include Arduino.h -x c++ maxim_head_servo.ino
//       -x none host_main.cpp
#include <Arduino.h>
#include <Servo.h>

#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

unsigned long hostMillis = 0;
HostSerial Serial;

void setup();
void loop();
extern Servo pan;
extern Servo tilt;

static std::string hex(const std::string &bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out.empty() ? "-" : out;
}

static std::string pulse(const Servo &servo) {
  return servo.attached ? std::to_string(servo.us) : "-";
}

static void emit() {
  std::cout << hex(Serial.output) << ' ' << pulse(pan) << ' ' << pulse(tilt) << '\n';
  Serial.output.clear();
}

int main() {
  setup();
  emit();
  std::string text;
  while (std::getline(std::cin, text)) {
    std::istringstream fields(text);
    std::string data;
    fields >> hostMillis >> data;
    if (data != "-") {
      for (size_t i = 0; i + 1 < data.size(); i += 2) {
        Serial.input.push_back(static_cast<char>(std::stoi(data.substr(i, 2), nullptr, 16)));
      }
    }
    loop();
    emit();
  }
  return 0;
}
